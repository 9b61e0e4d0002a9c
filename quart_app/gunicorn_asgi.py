"""app.py for gunicorn 27.0.1's asgi worker, with a fix: `gunicorn -k gunicorn_worker.ASGIWorker gunicorn_asgi:app`.

Quart listens for `http.disconnect` until the client goes away, and its call of the app ends only then. This
worker sends that message only once the connection is closed, but closes a connection (after a `Connection: close`
or an HTTP/1.0 request, as ab sends) or starts its keep-alive timer only once the call has ended: such connections
were never closed, and ab waited on its first one until it timed out. Once the response is sent, the only message
left in ASGI is `http.disconnect`: this wrapper delivers it then, as uvicorn and hypercorn do.
"""

import asyncio

from app import app as quart_app
from hypercorn.typing import ASGIReceiveCallable, ASGIReceiveEvent, ASGISendCallable, ASGISendEvent, Scope


async def app(scope: Scope, receive: ASGIReceiveCallable, send: ASGISendCallable) -> None:
    if scope["type"] != "http":
        return await quart_app(scope, receive, send)
    answered = asyncio.Event()

    async def send_and_note(message: ASGISendEvent) -> None:
        await send(message)
        if message["type"] == "http.response.body" and not message.get("more_body", False):
            answered.set()

    async def receive_until_answered() -> ASGIReceiveEvent:
        message = asyncio.ensure_future(receive())
        done = asyncio.ensure_future(answered.wait())
        await asyncio.wait({message, done}, return_when=asyncio.FIRST_COMPLETED)
        done.cancel()
        if message.done():
            return message.result()
        message.cancel()
        return {"type": "http.disconnect"}

    await quart_app(scope, receive_until_answered, send_and_note)
