"""Serve the app with gevent's own WSGI server: one process, one greenlet per request."""

import os
import signal

# isort: off
from patched import app  # first: it patches the standard library before anything else loads it
import gevent
from gevent.pool import Pool
from gevent.pywsgi import WSGIServer
# isort: on

# How long a stop waits for requests in flight, like gunicorn's default graceful timeout.
GRACEFUL_TIMEOUT = 30.0

if __name__ == "__main__":
    port = int(os.environ.get("PORT", "3000"))
    # Request logging off, like gunicorn's default; the default backlog (128) is below the loads we test.
    # An unbounded Pool instead of bare greenlets, so that a stop knows which requests are in flight.
    server = WSGIServer(("0.0.0.0", port), app, backlog=4096, log=None, spawn=Pool())
    # Without this, SIGTERM (docker compose stop) kills the process and cuts every request in flight.
    # close() stops accepting; serve_forever then waits for the pool, by default for only 1 s.
    gevent.signal_handler(signal.SIGTERM, server.close)
    server.serve_forever(stop_timeout=GRACEFUL_TIMEOUT)
