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


class GeventEventLoop(asyncio.EventLoop):
    """The one addition to Flask's override. From CPython 3.14.3 (and 3.13.12) a job that ends in the executor hands
    its result straight to the waiting coroutine when the loop is running in the job's OS thread, without waking the
    loop; under gevent every greenlet shares that thread, so the loop sleeps on in its select until some unrelated
    timer wakes it (gevent/gevent#2213, open in gevent 26.9). aiohttp looks slow_api's name up in the executor
    (loop.getaddrinfo), so without this every request waited up to about a second more than it asked for."""

    def run_in_executor(self, executor, func, *args):
        def job():
            try:
                return func(*args)
            finally:
                self.call_soon_threadsafe(lambda: None)  # the loop's wake-up, before the result is set

        return super().run_in_executor(executor, job)


loop = GeventEventLoop()
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
