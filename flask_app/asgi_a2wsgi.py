"""The unchanged WSGI app wrapped with a2wsgi's WSGIMiddleware, the other WSGI-to-ASGI wrapper on PyPI.

Unlike asgiref's WsgiToAsgi (asgi.py), it runs each request in a thread pool of its own, `workers` threads (10 by
default), and streams the request body to the app instead of reading it whole first. A2WSGI_THREADS sizes the pool.
"""

import os

from a2wsgi import WSGIMiddleware
from app import app as wsgi_app

app = WSGIMiddleware(wsgi_app, workers=int(os.environ.get("A2WSGI_THREADS", "10")))
