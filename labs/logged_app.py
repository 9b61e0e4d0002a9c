"""The app with Python's logging configured, as a production app's would be: warnings to stderr, in the container's
log. The app itself configures none, and urllib3 gives its own logger a NullHandler, so without this its warnings
(`Connection pool is full, discarding connection`) go nowhere.
"""

import logging

logging.basicConfig(level=logging.WARNING)

from app import app  # noqa: E402

__all__ = ["app"]
