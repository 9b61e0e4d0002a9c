"""The app for gunicorn's gevent worker (`cpu_offload:app`), its ?cpu= work handed to gevent's threadpool: the
request's greenlet waits cooperatively for the result. The work is pure Python, so it still needs the GIL: the
event loop's thread gets it back at every switch interval (5 ms) instead of after the whole computation.
"""

import gevent

# isort: off
import app as flask_app
from cpu_work import render
# isort: on


def render_in_threadpool(units: int) -> int:
    return gevent.get_hub().threadpool.apply(render, (units,))


flask_app.render = render_in_threadpool  # what the view calls, looked up in the app's module at each request
app = flask_app.app
