"""An app that never gets to start: the database it waits for (services-*.yml) never turns healthy."""

from flask import Flask

app = Flask(__name__)


@app.get("/")
def hello() -> str:
    return "hello"
