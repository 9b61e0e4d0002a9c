"""The psycogreen-patched app for uWSGI's gevent loop, which does not patch the standard library by itself.

gunicorn's gevent worker patches everything before it loads the app; uWSGI's --gevent-early-monkey-patch leaves
threading unpatched (seen: `gevent.monkey.is_module_patched("thread")` is False in the app), and then a request
waiting for a free Postgres connection would block the whole process. So this patches first, as
flask_app/patched.py does.
"""

from gevent import monkey

monkey.patch_all()

from patched import app  # noqa: E402

__all__ = ["app"]
