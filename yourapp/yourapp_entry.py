"""The reader's WSGI app as every server imports it: `yourapp_entry:application`, whatever YOURAPP_CALLABLE names
(`module:app`, or a factory called as `module:create_app()`), so each way's command is the same for every app.

`python -m yourapp_entry` imports it once and says in one line what went wrong: the harness runs it before a way
starts, so that an app that does not import, or a factory that raises, is a line and not a server's traceback.

The image's FLASK_APP names `yourapp_entry:application` too, so that a SETUP's `flask init-db` finds the app's own
commands on every Flask version (`flask --app` came with Flask 2.2)."""

from __future__ import annotations

import ast
import importlib
import os
import sys
from typing import Any


def load(spec: str) -> Any:
    module_name, _, expression = spec.partition(":")
    module = importlib.import_module(module_name)
    expression = expression or "app"
    name, call, rest = expression.partition("(")
    found = getattr(module, name.strip())
    if not call:
        return found
    # Arguments as literals only, as Flask's own `--app 'module:create_app("x")'` reads them.
    arguments = ast.literal_eval(f"({rest.rstrip().removesuffix(')')},)") if rest.strip(") ") else ()
    return found(*arguments)


def described(error: BaseException) -> str:
    """The error and where it was raised: its innermost frame."""
    where = ""
    trace = error.__traceback__
    while trace is not None:
        where = f" ({trace.tb_frame.f_code.co_filename}:{trace.tb_lineno})"
        trace = trace.tb_next
    return f"{type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}{where}"


def cause(error: BaseException) -> str:
    """The error this one was raised from, first in its chain (a driver's ImportError under a library's own
    error): the cause to fix, where the error names only its consequence."""
    first = error
    while True:
        earlier = first.__cause__ or (None if first.__suppress_context__ else first.__context__)
        if earlier is None:
            break
        first = earlier
    return "" if first is error else f"; caused by {described(first)}"


def main() -> int:
    spec = os.environ.get("YOURAPP_CALLABLE", "app:app")
    try:
        app = load(spec)
    # Any failure of the reader's code, SystemExit included, becomes the one line.
    except BaseException as error:  # noqa: BLE001
        print(f"{spec}: {described(error)}{cause(error)}".splitlines()[0], file=sys.stderr)
        return 1
    if not callable(app):
        print(f"{spec}: {type(app).__name__} is not a WSGI callable", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
else:
    application = load(os.environ.get("YOURAPP_CALLABLE", "app:app"))
