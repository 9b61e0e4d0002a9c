"""The one Flask app every scenario serves. It knows nothing about servers or gevent."""

import os
import time

import requests
from cpu_work import render, units_requested
from flask import Flask, request
from werkzeug.exceptions import BadGateway, BadRequest, GatewayTimeout, HTTPException

SLOW_API_URL = os.environ.get("SLOW_API_URL", "http://slow_api:8000/")
# Seconds the slow API may take beyond the delay we ask for before we give up on it.
TIMEOUT_MARGIN = float(os.environ.get("SLOW_API_TIMEOUT_MARGIN", "5"))
CONNECT_TIMEOUT = 3.0
MAX_DELAY = 30.0
# "session" keeps connections to slow_api open in one shared pool; "per-request" is the tutorial's
# requests.get, which opens a new connection, and looks slow_api's address up, for every request; "none"
# calls nothing and waits the delay in place, to measure what the server and Flask cost on their own.
SLOW_API_CLIENT = os.environ.get("SLOW_API_CLIENT", "session")
# The most connections to slow_api the session keeps open. urllib3's default is 10: past that, every extra
# request opens its own connection and drops it afterwards (labs/pool-default.yml shows what that costs).
SLOW_API_POOL_SIZE = int(os.environ.get("SLOW_API_POOL_SIZE", "1000"))


def http_client() -> requests.Session | None:
    if SLOW_API_CLIENT == "none":
        return None
    if SLOW_API_CLIENT == "per-request":
        return requests  # type: ignore[return-value]  # the module's get() is a one-off session
    if SLOW_API_CLIENT != "session":
        raise SystemExit(f"SLOW_API_CLIENT must be 'session', 'per-request' or 'none', not {SLOW_API_CLIENT!r}")
    session = requests.Session()
    session.mount("http://", requests.adapters.HTTPAdapter(pool_maxsize=SLOW_API_POOL_SIZE))
    return session


slow_api = http_client()
app = Flask(__name__)


def query_parameter(name: str, default: str) -> str:
    try:
        return request.args.get(name, default)
    except UnicodeDecodeError:  # werkzeug decodes a raw (not %-encoded) query string as strict UTF-8
        raise BadRequest("the query string must be UTF-8") from None


def requested_delay() -> float:
    raw = query_parameter("delay", "1")
    try:
        delay = float(raw)
    except ValueError:
        raise BadRequest(f"delay must be a number of seconds, got {raw[:40]!r}") from None
    # Written this way round so NaN and infinity fail the test too.
    if not 0 <= delay <= MAX_DELAY:
        raise BadRequest(f"delay must be between 0 and {MAX_DELAY:g} seconds")
    return delay


def requested_cpu() -> int:
    try:
        return units_requested(query_parameter("cpu", "0"))
    except ValueError as error:
        raise BadRequest(str(error)) from None


def call_slow_api(delay: float) -> str:
    if slow_api is None:
        time.sleep(delay)  # cooperative where gevent patched the standard library
        return "slow api response"  # what slow_api would have said, so that every check reads the same body
    try:
        response = slow_api.get(
            SLOW_API_URL,
            params={"delay": delay},
            timeout=(CONNECT_TIMEOUT, delay + TIMEOUT_MARGIN),
        )
    # A connect timeout is also a ConnectionError: it means unreachable, not slow.
    except requests.ConnectionError:
        raise BadGateway("slow_api is unreachable") from None
    except requests.Timeout:
        raise GatewayTimeout(f"slow_api did not answer within {delay + TIMEOUT_MARGIN:g} seconds") from None
    if response.status_code != 200:
        raise BadGateway(f"slow_api answered {response.status_code}")
    return response.text


@app.get("/")
def index() -> str:
    delay, cpu = requested_delay(), requested_cpu()  # both checked before any work
    answer = call_slow_api(delay)
    render(cpu)  # ?cpu=: building the page, after the wait; none by default
    return "Hi there! " + answer


@app.errorhandler(HTTPException)
def plain_text_error(error: HTTPException) -> tuple[str, int, dict[str, str]]:
    # One line of text instead of Flask's HTML page: what ab, curl and the tests read.
    return f"{error.description}\n", error.code or 500, {"Content-Type": "text/plain; charset=utf-8"}
