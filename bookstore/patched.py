"""The app with the standard library made cooperative, for uWSGI, which runs gevent but does not patch.

The patch must come before anything imports psycopg: psycopg 3 picks its way of waiting for the socket once, at
import (psycopg/waiting.py), and imported first it would block the whole process on every query.
"""

from gevent import monkey

monkey.patch_all()

from app import app  # noqa: E402

__all__ = ["app"]
