"""flask_app/app.py rewritten for asyncio: Quart instead of Flask, aiohttp instead of requests. It knows nothing
about servers either: what gunicorn's asgi worker needs is in gunicorn_asgi.py and gunicorn_worker.py."""

import asyncio
import os

import aiohttp
from cpu_work import render, units_requested
from quart import Quart, request
from quart.wrappers import BaseRequestWebsocket
from werkzeug.exceptions import BadGateway, BadRequest, GatewayTimeout, HTTPException
from werkzeug.routing import MapAdapter

SLOW_API_URL = os.environ.get("SLOW_API_URL", "http://slow_api:8000/")
# Seconds the slow API may take beyond the delay we ask for before we give up on it.
TIMEOUT_MARGIN = float(os.environ.get("SLOW_API_TIMEOUT_MARGIN", "5"))
CONNECT_TIMEOUT = 3.0
MAX_DELAY = 30.0
# "session" keeps connections to slow_api open in one shared pool; "per-request" is the tutorial's
# requests.get, which opens a new connection, and looks slow_api's address up, for every request; "none"
# calls nothing and waits the delay in place, to measure what the server and Quart cost on their own.
SLOW_API_CLIENT = os.environ.get("SLOW_API_CLIENT", "session")
# aiohttp's pool holds 100 connections by default and makes every call past that wait for a free one: a
# request of a busy worker would wait for slow_api's delay twice. Above the most requests one process holds.
SLOW_API_CONNECTIONS = int(os.environ.get("SLOW_API_CONNECTIONS", "1000"))


def http_client() -> aiohttp.ClientSession | None:
    if SLOW_API_CLIENT == "none":
        return None
    if SLOW_API_CLIENT == "per-request":
        # No connection kept, no address cached: each call connects, and looks slow_api up, afresh.
        return aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0, force_close=True, use_dns_cache=False))
    if SLOW_API_CLIENT != "session":
        # Not SystemExit: raised at startup, an Exception stops every server; uvicorn serves on after a SystemExit.
        raise RuntimeError(f"SLOW_API_CLIENT must be 'session', 'per-request' or 'none', not {SLOW_API_CLIENT!r}")
    return aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=SLOW_API_CONNECTIONS))


class App(Quart):
    """Quart, with a 400 instead of a 500 for a query string that is not UTF-8."""

    def create_url_adapter(self, incoming: BaseRequestWebsocket | None) -> MapAdapter | None:
        try:
            return super().create_url_adapter(incoming)
        # Quart's routing decodes a raw (not %-encoded) query string as strict UTF-8, before any view: a 500 else.
        except UnicodeDecodeError:
            raise BadRequest("the query string must be UTF-8") from None


slow_api: aiohttp.ClientSession | None = None  # opened at startup: a session belongs to the server's event loop
app = App(__name__)


@app.before_serving
async def open_http_client() -> None:
    global slow_api
    slow_api = http_client()


@app.after_serving
async def close_http_client() -> None:
    if slow_api is not None:
        await slow_api.close()


def requested_delay() -> float:
    raw = request.args.get("delay", "1")  # a query string that is not UTF-8 never gets here: see App
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
        return units_requested(request.args.get("cpu", "0"))
    except ValueError as error:
        raise BadRequest(str(error)) from None


async def call_slow_api(delay: float) -> str:
    if slow_api is None:
        await asyncio.sleep(delay)
        return "slow api response"  # what slow_api would have said, so that every check reads the same body
    try:
        async with slow_api.get(
            SLOW_API_URL,
            params={"delay": delay},
            timeout=aiohttp.ClientTimeout(sock_connect=CONNECT_TIMEOUT, sock_read=delay + TIMEOUT_MARGIN),
        ) as response:
            text = await response.text()
    # A read timeout is also a ClientConnectionError: it means slow, not unreachable.
    except aiohttp.SocketTimeoutError:
        raise GatewayTimeout(f"slow_api did not answer within {delay + TIMEOUT_MARGIN:g} seconds") from None
    # A connect timeout is a ClientConnectionError too: it means unreachable, not slow.
    except aiohttp.ClientConnectionError:
        raise BadGateway("slow_api is unreachable") from None
    if response.status != 200:
        raise BadGateway(f"slow_api answered {response.status}")
    return text


@app.get("/")
async def index() -> str:
    delay, cpu = requested_delay(), requested_cpu()
    answer = await call_slow_api(delay)
    render(cpu)  # ?cpu=: building the page, after the wait, on the event loop as a Quart view would
    return "Hi there! " + answer


@app.errorhandler(HTTPException)
async def plain_text_error(error: HTTPException) -> tuple[str, int, dict[str, str]]:
    # One line of text instead of Quart's HTML page: what ab, curl and the tests read.
    return f"{error.description}\n", error.code or 500, {"Content-Type": "text/plain; charset=utf-8"}
