"""The tutorial's bonus: half the delay waits on the slow API, half inside Postgres (`pg_sleep`).

Under gevent the HTTP half is cooperative once the standard library is patched, but psycopg2 talks to
Postgres through libpq's own C sockets, which no monkey-patch reaches: see patched.py.
"""

import os
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import psycopg2
import requests
from cpu_work import render, units_requested
from flask import Flask, request
from werkzeug.exceptions import BadGateway, BadRequest, GatewayTimeout, HTTPException, ServiceUnavailable

SLOW_API_URL = os.environ.get("SLOW_API_URL", "http://slow_api:8000/")
# No default: the credentials come from the environment (the compose file), never from the image.
DATABASE_URL = os.environ.get("DATABASE_URL") or ""
if not DATABASE_URL:
    raise SystemExit("DATABASE_URL must be set, e.g. postgresql://postgres:<password>@postgres:5432/postgres")
DATABASE = psycopg2.extensions.parse_dsn(DATABASE_URL)
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


def database_address() -> str:
    # libpq would look the host name up itself, with a blocking call that no monkey-patch reaches: one slow
    # DNS answer (measured: 5 s while the postgres container stopped) froze every greenlet of the worker.
    # Python's lookup is the patched, cooperative one; libpq then only connects to the address.
    port = int(DATABASE.get("port", 5432))
    return socket.getaddrinfo(DATABASE.get("host"), port, proto=socket.IPPROTO_TCP)[0][4][0]


# gunicorn's gevent worker patches threading before it imports this module (uWSGI's --gevent-early-monkey-patch
# too), so a request waiting for a slot waits as a greenlet and the others go on.
connection_slots = threading.BoundedSemaphore(POOL_MAX)
# One process, and gevent switches only on I/O: list.pop and list.append need no lock.
idle_connections: list[psycopg2.extensions.connection] = []


def connect() -> psycopg2.extensions.connection:
    # Patched, psycogreen drives the connect and libpq's connect_timeout no longer applies (measured: 3.07 s
    # to an address nobody answers, with connect_timeout=2): TCP_USER_TIMEOUT bounds it in the kernel instead.
    connection = psycopg2.connect(DATABASE_URL, hostaddr=database_address(), connect_timeout=3, tcp_user_timeout=3000)
    connection.autocommit = True  # no transaction left open between requests
    return connection


@contextmanager
def postgres_connection() -> Iterator[psycopg2.extensions.connection]:
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
        with postgres_connection() as connection, connection.cursor() as cursor:
            cursor.execute("SELECT pg_sleep(%s)", (seconds,))
    except (psycopg2.Error, OSError):
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
