"""The database engine and its bounded pool, shared by the Flask app and the capture tool, and how a database
failure becomes a 503 (or a 504, for a statement timeout) with one clear line.

Every setting comes from the environment (bookstore.yml): DATABASE_URL, POSTGRES_POOL_MAX (connections per
process; the compose file sets it so that all the processes of one target hold 16 together),
POSTGRES_POOL_TIMEOUT (how long a request waits for a free connection before its 503) and
POSTGRES_STATEMENT_TIMEOUT (how long Postgres lets one statement run before it cancels it: a 504).

GET /health has an engine of its own (make_health_engine): one connection per process, outside the requests'
pool, so that a pool whose every connection is busy serving requests does not fail the healthcheck.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from sqlalchemy import create_engine, exc
from sqlalchemy.engine import Engine
from werkzeug.exceptions import GatewayTimeout, HTTPException, ServiceUnavailable

# No default: the credentials come from the environment (the compose file), never from the image.
DATABASE_URL = os.environ.get("DATABASE_URL") or ""
POOL_MAX = int(os.environ.get("POSTGRES_POOL_MAX", "8"))
POOL_TIMEOUT = float(os.environ.get("POSTGRES_POOL_TIMEOUT", "10"))
# Seconds, 30 by default: three times the slowest statement the app sends with one target's pool full at the full
# size (the last page, 100 authors at offset 999,900: at most 9 s with 16 at once on two cores; alone 0.2-1.3 s),
# measured in docs/bookstore.md. Only every target's pool full of such pages (96 at once: up to 45 s) goes past
# it, an overload where a 504 is the right answer. So a statement whose client has gone (nothing tells Postgres)
# stops within 30 s, the servers' graceful timeout.
STATEMENT_TIMEOUT = float(os.environ.get("POSTGRES_STATEMENT_TIMEOUT", "30"))
# libpq's own options: a connect gives up after 3 s (a stopped Postgres answers in far less; a lost host would
# otherwise hold the request for minutes); every session is in UTC, so created_at reads the same everywhere, and
# has the statement timeout (0 turns it off, as in Postgres). application_name tells the pools apart in
# pg_stat_activity.
OPTIONS = f"-c timezone=UTC -c statement_timeout={round(STATEMENT_TIMEOUT * 1000)}"
CONNECT_ARGS = {"connect_timeout": 3, "options": OPTIONS, "application_name": "bookstore"}
ENGINE_SETTINGS = {
    # A fixed pool: max_overflow=0 means never more than POOL_MAX connections, so the six targets' totals
    # (7 x 16) stay below Postgres's max_connections; a request waits up to POOL_TIMEOUT for a free one.
    "pool_size": POOL_MAX,
    "max_overflow": 0,
    "pool_timeout": POOL_TIMEOUT,
    # No pre-ping: it would cost a round trip on every request. After a Postgres restart the first request on
    # a dead connection fails (503) and SQLAlchemy then discards every connection the pool held.
    "pool_pre_ping": False,
}
# The healthcheck's own pool: one connection per process, never one of the requests'. Docker probes once a
# second with a 2 s limit: a probe waits at most 2 s for the connection (another probe holding it), and is
# pre-pinged (one round trip more a second) so that after a Postgres restart the first probe reconnects rather
# than failing on the dead connection.
HEALTH_CONNECT_ARGS = {**CONNECT_ARGS, "application_name": "bookstore-health"}
HEALTH_POOL_TIMEOUT = 2
HEALTH_SETTINGS = {"pool_size": 1, "max_overflow": 0, "pool_timeout": HEALTH_POOL_TIMEOUT, "pool_pre_ping": True}
# How a read's transaction ends. "rollback", the default: the session closes without a commit, as most apps' reads
# do. psycopg then forgets the statements it counted (a ROLLBACK could have undone a PREPARE), so none reaches its
# 5 runs on a connection and Postgres parses and plans every statement afresh. "commit": the read commits, psycopg
# keeps its counts, and from the 5th time a connection sends a statement it runs from a prepared statement. The
# evidence, and what it costs: docs/bookstore.md.
READS_END_WITH = os.environ.get("READS_END_WITH") or "rollback"
if READS_END_WITH not in ("rollback", "commit"):
    raise SystemExit(f"READS_END_WITH must be rollback or commit, not {READS_END_WITH!r}")
QUERY_CANCELED = "57014"  # Postgres's SQLSTATE for a statement cancelled, by its timeout or by a cancel request


def database_url() -> str:
    if not DATABASE_URL:
        raise SystemExit("DATABASE_URL must be set, e.g. postgresql+psycopg://postgres:<password>@postgres/bookstore")
    return DATABASE_URL


def make_engine() -> Engine:
    return create_engine(database_url(), connect_args=CONNECT_ARGS, **ENGINE_SETTINGS)


def make_health_engine() -> Engine:
    return create_engine(database_url(), connect_args=HEALTH_CONNECT_ARGS, **HEALTH_SETTINGS)


def first_line(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__


@contextmanager
def health_connection() -> Iterator[None]:
    """Around a health check's use of its one connection: if an earlier check still holds it (waiting on a
    database that does not answer), say so, instead of the requests' pool's message with the requests' numbers."""
    try:
        yield
    except exc.TimeoutError:
        raise ServiceUnavailable(
            f"database unavailable: an earlier health check still waits on it after {HEALTH_POOL_TIMEOUT} s"
        ) from None


def database_failure(error: Exception) -> HTTPException | None:
    """The answer for a database failure, with one line that says what failed, or None if the error is not one
    (a bug: let it be a 500): 504 for a statement that ran past the statement timeout, 503 for the rest."""
    if isinstance(error, exc.TimeoutError):  # the pool's wait ran out: every connection busy
        return ServiceUnavailable(
            f"database pool: no free connection within {POOL_TIMEOUT:g} s ({POOL_MAX} in use in this process)"
        )
    cancelled = isinstance(error, exc.DBAPIError) and getattr(error.orig, "sqlstate", None) == QUERY_CANCELED
    if cancelled and "statement timeout" in str(error.orig):  # not a cancel request: that is a 503 below
        return GatewayTimeout(f"database: statement cancelled after the {STATEMENT_TIMEOUT:g} s statement timeout")
    if isinstance(error, (exc.OperationalError, exc.InterfaceError)) or (
        isinstance(error, exc.DBAPIError) and error.connection_invalidated
    ):
        return ServiceUnavailable(f"database unavailable: {first_line(error.orig or error)}")
    return None


def make_async_engine() -> Any:
    """The same engine for the asyncio port: same URL, driver (psycopg 3, in its async mode) and pool settings."""
    # Imported here: only the Quart image installs greenlet, which the asyncio extension needs.
    from sqlalchemy.ext.asyncio import create_async_engine

    return create_async_engine(database_url(), connect_args=CONNECT_ARGS, **ENGINE_SETTINGS)


def make_async_health_engine() -> Any:
    """make_health_engine's twin for the asyncio port."""
    from sqlalchemy.ext.asyncio import create_async_engine

    return create_async_engine(database_url(), connect_args=HEALTH_CONNECT_ARGS, **HEALTH_SETTINGS)
