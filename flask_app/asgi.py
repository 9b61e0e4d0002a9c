"""Flask's ASGI recipe (its deployment page, "ASGI"): the unchanged WSGI app wrapped with asgiref's WsgiToAsgi.

The wrapper runs each request's WSGI call with asgiref's sync_to_async, thread-sensitive by default (asgiref/wsgi.py,
`run_wsgi_app`): in SyncToAsync.single_thread_executor, one thread for the whole process (asgiref/sync.py). So a process
serves one request at a time, however many the ASGI server holds; WsgiToAsgi has no setting for it.

Each request runs in a context of its own. uvicorn starts a pipelined request (a second one sent on the connection
before the first was answered) from the first request's task, which hands it a copy of that task's context, and with
it asgiref's executor of the first request, gone by then: WsgiToAsgi alone answers it 500, "RuntimeError:
CurrentThreadExecutor already quit or is broken" (asgiref 3.13.0; the same fault as django/asgiref#491 and #526, tasks
started from a request that has ended). docs/reliability.md has the reproduction.
"""

import asyncio
import contextvars
from typing import Any

from app import app as wsgi_app
from asgiref.wsgi import WsgiToAsgi

wrapped = WsgiToAsgi(wsgi_app)


async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    # A fresh, empty context: nothing of the request before it on the connection. Cancelling this task (the client
    # went away) cancels the one it awaits.
    await asyncio.create_task(wrapped(scope, receive, send), context=contextvars.Context())
