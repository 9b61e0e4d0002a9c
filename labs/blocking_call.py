"""flask_app/patched.py for the blocking-call lab, mounted over it: the patch first, as it should be, then the app,
whose call to slow_api is replaced by a wait in C, libc's usleep() through ctypes: a stand-in for a C extension's
client (a database driver, an SDK) that waits inside C, where no monkey-patch reaches.

CALL=direct makes the call in the request's greenlet: the whole process waits with it. CALL=threadpool hands it to
gevent's threadpool and waits cooperatively for the result; THREADPOOL_SIZE sets how many such calls run at once
(gevent's default: 10).
"""

import ctypes
import os

from gevent import monkey

monkey.patch_all()

# isort: off
import gevent  # noqa: E402
import app as flask_app  # noqa: E402
# isort: on

CALL = os.environ.get("CALL", "direct")
libc = ctypes.CDLL(None)  # ctypes lets go of the GIL during the call: only the event loop is stuck, not Python
hub = gevent.get_hub()
if "THREADPOOL_SIZE" in os.environ:
    hub.threadpool.maxsize = int(os.environ["THREADPOOL_SIZE"])


class Answer:
    status_code, text = 200, "slow api response"


class CClient:
    """The app's requests.Session interface, waiting `delay` seconds in C instead of asking slow_api."""

    def get(self, url: str, params: dict[str, float], timeout: tuple[float, float]) -> Answer:
        microseconds = int(params["delay"] * 1_000_000)
        if CALL == "threadpool":
            hub.threadpool.apply(libc.usleep, (microseconds,))
        else:
            libc.usleep(microseconds)
        return Answer()


flask_app.slow_api = CClient()  # type: ignore[assignment]
app = flask_app.app
