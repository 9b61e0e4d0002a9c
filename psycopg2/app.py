"""The tutorial's bonus: half the delay waits on the slow API, half inside Postgres (`pg_sleep`).

Under gevent the HTTP half is cooperative once the standard library is patched, but psycopg2 talks to
Postgres through libpq's own C sockets, which no monkey-patch reaches: see patched.py.
"""

import os

import psycopg2
import requests
from flask import Flask, request
from werkzeug.exceptions import BadGateway, BadRequest, GatewayTimeout, HTTPException, ServiceUnavailable

SLOW_API_URL = os.environ.get("SLOW_API_URL", "http://slow_api:8000/")
DATABASE_URL = os.environ.get("DATABASE_URL", "postgresql://postgres:playground@postgres:5432/postgres")
MAX_DELAY = 30.0

app = Flask(__name__)


def half_of_requested_delay() -> float:
    try:
        delay = float(request.args.get("delay", "1"))
    except ValueError:
        raise BadRequest("delay must be a number of seconds") from None
    if not 0 <= delay <= MAX_DELAY:  # also rejects NaN and infinity
        raise BadRequest(f"delay must be between 0 and {MAX_DELAY:g} seconds")
    return delay / 2


def sleep_in_postgres(seconds: float) -> None:
    try:
        # One connection per request, always closed: nothing to leak when Postgres restarts.
        connection = psycopg2.connect(DATABASE_URL, connect_timeout=3)
        try:
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_sleep(%s)", (seconds,))
        finally:
            connection.close()
    except psycopg2.Error:
        raise ServiceUnavailable("postgres is unavailable") from None


def slow_api_text(seconds: float) -> str:
    try:
        response = requests.get(SLOW_API_URL, params={"delay": seconds}, timeout=(3, seconds + 5))
        response.raise_for_status()
    except requests.Timeout:
        raise GatewayTimeout("slow_api did not answer in time") from None
    except requests.RequestException:
        raise BadGateway("slow_api is unreachable or failing") from None
    return response.text


@app.get("/")
def index() -> str:
    half = half_of_requested_delay()
    sleep_in_postgres(half)
    # Same length on every request: ab counts a body of varying length as a failed request.
    return f"Hi there! {slow_api_text(half)}, postgres slept {half:.2f} s"


@app.errorhandler(HTTPException)
def plain_text_error(error: HTTPException) -> tuple[str, int, dict[str, str]]:
    return f"{error.description}\n", error.code or 500, {"Content-Type": "text/plain; charset=utf-8"}
