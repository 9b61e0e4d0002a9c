"""Serve the app with gevent's own WSGI server: one process, one greenlet per request."""

import os

# isort: off
from patched import app  # first: it patches the standard library before anything else loads it
from gevent.pywsgi import WSGIServer
# isort: on

if __name__ == "__main__":
    port = int(os.environ.get("PORT", "3000"))
    # Request logging off, like gunicorn's default; the default backlog (256) is below the loads we test.
    WSGIServer(("0.0.0.0", port), app, backlog=4096, log=None).serve_forever()
