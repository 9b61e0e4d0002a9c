"""The same app with its view written `async def` (Flask's async views, `flask[async]`), calling slow_api with aiohttp.

Under a WSGI server this adds no concurrency. Flask runs each async view with asgiref's async_to_sync: a new event
loop, in a new thread, that runs this one request while the server's thread waits for it. The server's threads
still bound how many requests are served at once, and each request costs a loop and a thread more.
"""

import asyncio

import aiohttp
from app import (
    CONNECT_TIMEOUT,
    SLOW_API_CLIENT,
    SLOW_API_URL,
    TIMEOUT_MARGIN,
    plain_text_error,
    requested_cpu,
    requested_delay,
)
from cpu_work import render
from flask import Flask
from werkzeug.exceptions import BadGateway, GatewayTimeout, HTTPException

app = Flask(__name__)
app.register_error_handler(HTTPException, plain_text_error)


async def call_slow_api(delay: float) -> str:
    if SLOW_API_CLIENT == "none":
        await asyncio.sleep(delay)
        return "slow api response"
    timeout = aiohttp.ClientTimeout(sock_connect=CONNECT_TIMEOUT, sock_read=delay + TIMEOUT_MARGIN)
    try:
        # A session per request, whatever SLOW_API_CLIENT says: a session belongs to the event loop it was made in,
        # and every request runs in a new loop that is closed after it. No connection to slow_api is ever reused.
        async with (
            aiohttp.ClientSession(timeout=timeout) as session,
            session.get(SLOW_API_URL, params={"delay": delay}) as response,
        ):
            if response.status != 200:
                raise BadGateway(f"slow_api answered {response.status}")
            return await response.text()
    # Both timeouts are connection errors to aiohttp: only the read timeout means slow, not unreachable.
    except aiohttp.SocketTimeoutError:
        raise GatewayTimeout(f"slow_api did not answer within {delay + TIMEOUT_MARGIN:g} seconds") from None
    except aiohttp.ClientConnectionError:
        raise BadGateway("slow_api is unreachable") from None


@app.get("/")
async def index() -> str:
    delay, cpu = requested_delay(), requested_cpu()
    answer = await call_slow_api(delay)
    render(cpu)
    return "Hi there! " + answer
