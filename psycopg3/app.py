"""The tutorial's bonus with psycopg 3: half the delay waits on the slow API, half inside Postgres (`pg_sleep`).

psycopg 3 needs no psycogreen: it waits for Postgres's socket in Python when gevent has patched `select`, and
in C (blocking the whole worker) when not. It looks once, when it is first imported (psycopg/waiting.py,
`_is_select_patched`): under gunicorn's gevent worker, which patches before it loads this module, that is
after the patch. psycopg_first.conf.py shows the other order.
"""

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import psycopg
import requests
from cpu_work import render, units_requested
from flask import Flask, request
from werkzeug.exceptions import BadGateway, BadRequest, GatewayTimeout, HTTPException, ServiceUnavailable

SLOW_API_URL = os.environ.get("SLOW_API_URL", "http://slow_api:8000/")
# No default: the credentials come from the environment (the compose file), never from the image.
DATABASE_URL = os.environ.get("DATABASE_URL") or ""
if not DATABASE_URL:
    raise SystemExit("DATABASE_URL must be set, e.g. postgresql://postgres:<password>@postgres:5432/postgres")
MAX_DELAY = 30.0
# "pool" keeps its connections open for the next requests; "per-request" opens and closes one for every
# request, as the tutorial does (each connect costs Postgres a fork and a SCRAM exchange).
POSTGRES_CONNECTIONS = os.environ.get("POSTGRES_CONNECTIONS", "pool")
if POSTGRES_CONNECTIONS not in ("pool", "per-request"):
    raise SystemExit(f"POSTGRES_CONNECTIONS must be 'pool' or 'per-request', not {POSTGRES_CONNECTIONS!r}")
# Either way at most POOL_MAX connections at once: past its max_connections Postgres refuses new ones ("too
# many clients"), so a request waits for a free one instead, up to POOL_TIMEOUT seconds.
POOL_MAX = int(os.environ.get("POSTGRES_POOL_MAX", "30"))
POOL_TIMEOUT = float(os.environ.get("POSTGRES_POOL_TIMEOUT", "10"))

app = Flask(__name__)
slow_api = requests.Session()
slow_api.mount("http://", requests.adapters.HTTPAdapter(pool_maxsize=1000))


def half_of_requested_delay() -> float:
    try:
        delay = float(request.args.get("delay", "1"))
    except ValueError:
        raise BadRequest("delay must be a number of seconds") from None
    if not 0 <= delay <= MAX_DELAY:  # also rejects NaN and infinity
        raise BadRequest(f"delay must be between 0 and {MAX_DELAY:g} seconds")
    return delay / 2


def requested_cpu() -> int:
    try:
        return units_requested(request.args.get("cpu", "0"))
    except ValueError as error:
        raise BadRequest(str(error)) from None


# The same small pool as psycopg2/app.py, not psycopg_pool's ConnectionPool: that one is cooperative under
# gevent too, but with Postgres down it keeps connecting in the background while each request waits out its
# whole timeout and fails with "couldn't get a connection" (measured: every request 3.0 s with timeout=3),
# which reads like a busy pool. Here a request fails at once, "postgres is unavailable", and the next one
# connects afresh. gunicorn's gevent worker patches threading before it imports this module: a request
# waiting for a slot waits as a greenlet and the others go on.
connection_slots = threading.BoundedSemaphore(POOL_MAX)
# One process, and gevent switches only on I/O: list.pop and list.append need no lock.
idle_connections: list[psycopg.Connection] = []


def connect() -> psycopg.Connection:
    # Unlike libpq inside psycopg2, psycopg 3 looks the host name up with Python's (patched, cooperative)
    # resolver and enforces connect_timeout itself (measured: 2.02 s to an address nobody answers, with
    # connect_timeout=2, other greenlets running meanwhile): none of psycopg2/app.py's workarounds are needed.
    # autocommit: no transaction left open between requests.
    return psycopg.connect(DATABASE_URL, connect_timeout=3, autocommit=True)


@contextmanager
def postgres_connection() -> Iterator[psycopg.Connection]:
    if not connection_slots.acquire(timeout=POOL_TIMEOUT):
        raise ServiceUnavailable(f"postgres pool: no free connection within {POOL_TIMEOUT:g} s ({POOL_MAX} in use)")
    try:
        # A connection is opened only when none is idle: never more than POOL_MAX open, idle ones included.
        connection = idle_connections.pop() if idle_connections else connect()
        try:
            yield connection
        except BaseException:
            # Mostly Postgres went away or restarted, and then the idle connections are dead too. Closing
            # them all means nothing leaks and the next request connects afresh.
            for dead in [connection, *idle_connections]:
                dead.close()
            idle_connections.clear()
            raise
        if POSTGRES_CONNECTIONS == "pool":
            idle_connections.append(connection)
        else:
            connection.close()
    finally:
        connection_slots.release()


def sleep_in_postgres(seconds: float) -> None:
    try:
        with postgres_connection() as connection:
            connection.execute("SELECT pg_sleep(%s)", (seconds,))
    except (psycopg.Error, OSError):
        raise ServiceUnavailable("postgres is unavailable") from None


def slow_api_text(seconds: float) -> str:
    try:
        response = slow_api.get(SLOW_API_URL, params={"delay": seconds}, timeout=(3, seconds + 5))
        response.raise_for_status()
    except requests.Timeout:
        raise GatewayTimeout("slow_api did not answer in time") from None
    except requests.RequestException:
        raise BadGateway("slow_api is unreachable or failing") from None
    return response.text


@app.get("/")
def index() -> str:
    half, cpu = half_of_requested_delay(), requested_cpu()
    sleep_in_postgres(half)
    answer = slow_api_text(half)
    render(cpu)  # ?cpu=: building the page, after the waits; none by default
    # Same length on every request: ab counts a body of varying length as a failed request.
    return f"Hi there! {answer}, postgres slept {half:.2f} s"


@app.errorhandler(HTTPException)
def plain_text_error(error: HTTPException) -> tuple[str, int, dict[str, str]]:
    return f"{error.description}\n", error.code or 500, {"Content-Type": "text/plain; charset=utf-8"}
