"""The database engine and its bounded pool, shared by the Flask app and the capture tool, and how a database
failure becomes a 503 with one clear line.

Every setting comes from the environment (bookstore.yml): DATABASE_URL, POSTGRES_POOL_MAX (connections per
process; the compose file sets it so that all the processes of one target hold 16 together) and
POSTGRES_POOL_TIMEOUT (how long a request waits for a free connection before its 503).
"""

from __future__ import annotations

import os
from typing import Any

from sqlalchemy import create_engine, exc
from sqlalchemy.engine import Engine

# No default: the credentials come from the environment (the compose file), never from the image.
DATABASE_URL = os.environ.get("DATABASE_URL") or ""
POOL_MAX = int(os.environ.get("POSTGRES_POOL_MAX", "8"))
POOL_TIMEOUT = float(os.environ.get("POSTGRES_POOL_TIMEOUT", "10"))
# libpq's own options: a connect gives up after 3 s (a stopped Postgres answers in far less; a lost host would
# otherwise hold the request for minutes), and every session is in UTC, so created_at reads the same everywhere.
CONNECT_ARGS = {"connect_timeout": 3, "options": "-c timezone=UTC"}
ENGINE_SETTINGS = {
    # A fixed pool: max_overflow=0 means never more than POOL_MAX connections, so the six targets' totals
    # (6 x 16) stay below Postgres's max_connections; a request waits up to POOL_TIMEOUT for a free one.
    "pool_size": POOL_MAX,
    "max_overflow": 0,
    "pool_timeout": POOL_TIMEOUT,
    # No pre-ping: it would cost a round trip on every request. After a Postgres restart the first request on
    # a dead connection fails (503) and SQLAlchemy then discards every connection the pool held.
    "pool_pre_ping": False,
}


def database_url() -> str:
    if not DATABASE_URL:
        raise SystemExit("DATABASE_URL must be set, e.g. postgresql+psycopg://postgres:<password>@postgres/bookstore")
    return DATABASE_URL


def make_engine() -> Engine:
    return create_engine(database_url(), connect_args=CONNECT_ARGS, **ENGINE_SETTINGS)


def unavailable_message(error: Exception) -> str | None:
    """The one line a 503 says for a database failure, or None if the error is not one (a bug: let it be a 500)."""
    if isinstance(error, exc.TimeoutError):  # the pool's wait ran out: every connection busy
        return f"database pool: no free connection within {POOL_TIMEOUT:g} s ({POOL_MAX} in use in this process)"
    if isinstance(error, (exc.OperationalError, exc.InterfaceError)) or (
        isinstance(error, exc.DBAPIError) and error.connection_invalidated
    ):
        first_line = str(error.orig or error).strip().splitlines()[0] if str(error.orig or error).strip() else ""
        return f"database unavailable: {first_line or type(error.orig or error).__name__}"
    return None


def make_async_engine() -> Any:
    """The same engine for the asyncio port: same URL, driver (psycopg 3, in its async mode) and pool settings."""
    # Imported here: only the Quart image installs greenlet, which the asyncio extension needs.
    from sqlalchemy.ext.asyncio import create_async_engine

    return create_async_engine(database_url(), connect_args=CONNECT_ARGS, **ENGINE_SETTINGS)
