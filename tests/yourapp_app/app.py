"""A reader's app for tests/test_yourapp.py: one module, several callables, so that every case runs on one image.

app (or create_app()): a page, and a page whose wait is in C (libc's usleep through ctypes), where no gevent patch
reaches, as a database driver's would be; create_broken(): a factory that raises; differs: an app whose answer
says whether its server runs several processes, which the development server does not."""

import ctypes

from flask import Flask, request

libc = ctypes.CDLL(None)
app = Flask(__name__)


@app.get("/")
def hello() -> str:
    return "hello"


@app.get("/block")
def block() -> str:
    libc.usleep(200_000)  # 0.2 s in C: past gevent's monitor's 0.1 s
    return "blocked"


def create_app() -> Flask:
    return app


def create_broken() -> Flask:
    raise RuntimeError("the factory refuses")


differs = Flask("differs")


@differs.get("/")
def multiprocess() -> str:
    return str(request.environ.get("wsgi.multiprocess"))
