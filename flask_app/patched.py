"""The app with the standard library made cooperative, for servers that run gevent but do not patch.

The patch must come before anything imports socket or ssl (requests, urllib3, Flask): a module that
grabbed the blocking socket first keeps it, and then one slow call blocks every greenlet.
"""

from gevent import monkey

monkey.patch_all()

from app import app  # noqa: E402

__all__ = ["app"]
