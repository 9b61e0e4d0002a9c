"""The async view of async_view.py under gevent, with the override Flask's docs give for it ("Async with Gevent",
"Combining with async/await"): one asyncio event loop running in a greenlet, on which every async view is scheduled.

By default Flask runs each async view with asgiref's async_to_sync: a new event loop in a new thread per request,
which under gevent's patching is a greenlet. Here the request's greenlet hands the coroutine to the one loop and waits
for its result; gunicorn's gevent worker has patched the standard library before it imports this module, so the loop
waits in gevent's select and that wait lets the other greenlets run.
"""

import asyncio

import gevent
from app import plain_text_error
from async_view import index
from flask import Flask
from werkzeug.exceptions import HTTPException

loop = asyncio.EventLoop()
gevent.spawn(loop.run_forever)


class GeventFlask(Flask):
    def async_to_sync(self, func):
        def run(*args, **kwargs):
            coro = func(*args, **kwargs)
            future = asyncio.run_coroutine_threadsafe(coro, loop)
            return future.result()

        return run


# The same view and error handler as async_view.py, on the app class with the override.
app = GeventFlask(__name__)
app.add_url_rule("/", view_func=index, methods=["GET"])
app.register_error_handler(HTTPException, plain_text_error)
