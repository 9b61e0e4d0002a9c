"""Flask 2.1 (before `flask --app`), pinned in a hashed lock with an older gunicorn than the servers': its set-up
`flask init-db` finds its command through FLASK_APP, and every way serves it."""

from pathlib import Path

import click
import flask
from flask import Flask

app = Flask(__name__)
STATE = Path("/tmp/initialized")


@app.cli.command("init-db")
def init_db() -> None:
    STATE.write_text("initialized")
    click.echo("Initialized the database.")


@app.get("/")
def hello() -> str:
    return f"flask {flask.__version__}, {STATE.read_text()}"
