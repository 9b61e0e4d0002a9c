"""flask_app/patched.py for the late-patch lab, mounted over it: flask_app/pywsgi.py imports this and serves the app
unchanged, with gevent's monkey-patch applied where PATCH says: `first`, the tutorial's order, or `last`, after the
app, Flask, requests and the app's requests.Session. With LIBRARY=socket-by-name the app calls slow_api through
socket_by_name.py, a library that bound `socket` by name when it was imported.
"""

import os

from gevent import monkey

PATCH = os.environ.get("PATCH", "first")
if PATCH == "first":
    monkey.patch_all()

# isort: off
import app as flask_app  # noqa: E402
import socket_by_name  # noqa: E402
# isort: on

if PATCH == "last":
    # Too late for socket_by_name, which keeps the blocking socket class it bound above. Not too late for requests:
    # urllib3 looks `socket.socket` up each time it connects, so it gets gevent's from here on. gevent logs a
    # MonkeyPatchWarning about ssl, imported before the patch: the only sign of it in the log.
    monkey.patch_all()

if os.environ.get("LIBRARY") == "socket-by-name":
    flask_app.slow_api = socket_by_name  # type: ignore[assignment]  # the same get() the app calls

app = flask_app.app
