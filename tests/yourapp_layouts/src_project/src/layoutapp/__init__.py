"""An app of a src/ layout, installed as a project: it answers only when it is both (else a 500, which no way is up
on), so that a way that serves it shows the harness installed it so."""

import importlib.metadata

from flask import Flask


def create_app() -> Flask:
    app = Flask(__name__)

    @app.get("/")
    def where() -> tuple[str, int]:
        installed = importlib.metadata.version("layoutapp")  # PackageNotFoundError, a 500, where not installed
        from_src = __file__.startswith("/app/src/layoutapp/")
        return f"layoutapp {installed} from {__file__}", 200 if from_src else 500

    return app
