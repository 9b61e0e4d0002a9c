"""Flask's ASGI recipe (its deployment page, "ASGI"): the unchanged WSGI app wrapped with asgiref's WsgiToAsgi.

The wrapper runs each request's WSGI call with asgiref's sync_to_async, thread-sensitive by default (asgiref/wsgi.py,
`run_wsgi_app`): in SyncToAsync.single_thread_executor, one thread for the whole process (asgiref/sync.py). So a process
serves one request at a time, however many the ASGI server holds; WsgiToAsgi has no setting for it.
"""

from app import app as wsgi_app
from asgiref.wsgi import WsgiToAsgi

app = WsgiToAsgi(wsgi_app)
