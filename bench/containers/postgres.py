"""A scenario's Postgres seen from outside: a query through psql in its container, a sampler of a load that also
keeps the peaks of Postgres's sessions and of its container's memory, and a wait until the queries a load left
behind have finished. Where this machine sees the engine's processes, the sessions are read from the backends'
process titles (so that watching costs Postgres no query); else the sampler runs through the engine, and the wait
asks Postgres."""

from __future__ import annotations

import json
import time
from collections.abc import Callable

from bench.containers.compose import RunningScenario, ScenarioError
from bench.containers.sampler import EngineSampler, Sampler, pg_sessions


def query(running: RunningScenario, database: str, sql: str) -> str:
    """One statement through psql in the postgres container; its rows as text."""
    command = ["exec", "-T", "postgres", "psql", "--no-psqlrc", "-At", "-U", "postgres", "-d", database, "-c", sql]
    return running.compose(*command).stdout.strip()


# Statements counted by Postgres itself (pg_stat_statements, loaded by bookstore.yml's Postgres), by kind: the
# first word (BEGIN, SELECT, INSERT, COMMIT, ROLLBACK). Counted as each statement ends, so a read right after a
# load is exact; pg_stat_database's transaction counts reach it only when each session flushes them, up to 10 s
# later for a pooled connection left idle. This query itself, which names the view, is left out.
STATEMENT_KINDS = r"""
SELECT coalesce(json_object_agg(kind, calls), '{}') FROM (
  SELECT upper(substring(query FROM '^\s*(\w+)')) AS kind, sum(calls) AS calls FROM pg_stat_statements
  WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
    AND query NOT LIKE '%pg_stat_statements%'
  GROUP BY 1) AS counted
"""
TRANSACTION_ENDS = ("COMMIT", "ROLLBACK")


def count_statements(running: RunningScenario, database: str) -> None:
    """Postgres counts every statement from now on (pg_stat_statements must be in shared_preload_libraries)."""
    query(running, database, "CREATE EXTENSION IF NOT EXISTS pg_stat_statements")


def statements_so_far(running: RunningScenario, database: str) -> dict[str, int]:
    """Statements run in `database` since the counts began, by kind."""
    return {kind: int(calls) for kind, calls in json.loads(query(running, database, STATEMENT_KINDS)).items()}


# Client sessions open and busy as Postgres itself counts them, where this machine cannot read the backends' titles
# (the engine in a VM): what pg_sessions counts, the clients over TCP (the apps, pgbench), not psql's on the local
# socket (client_port -1), this query's own.
SESSIONS = (
    "SELECT count(*), count(*) FILTER (WHERE state <> 'idle') FROM pg_stat_activity"
    " WHERE backend_type = 'client backend' AND client_port >= 0"
)


def session_counter(running: RunningScenario) -> Callable[[], tuple[int, int]]:
    """A function that counts Postgres's client sessions now, open and busy (in a query or a transaction): from the
    backends' process titles here, or asked of Postgres where this machine cannot see the engine's processes. For
    the Postgres running now: a restarted one needs a new counter."""
    if running.sees_processes("postgres"):
        postgres_pid = running.main_pid("postgres")
        return lambda: pg_sessions(postgres_pid)

    def asked() -> tuple[int, int]:
        opened, busy = query(running, "postgres", SESSIONS).split("|")
        return int(opened), int(busy)

    return asked


def sampler(
    running: RunningScenario, server: str | None, client: str | None = None, postgres: bool = True
) -> Sampler | EngineSampler:
    """A Sampler of a load on a scenario with Postgres: the `server` service's processes (None: Postgres's alone,
    for pgbench), and unless `postgres` is False Postgres's sessions of the client at address `client` (every
    client's if None) and its container's memory. From this machine's /proc where it shows the engine's processes,
    else through the engine."""
    service = server or "postgres"
    server_pid = running.main_pid(service)
    postgres_pid = running.main_pid("postgres") if postgres else None
    if running.sees_processes(service) and (not postgres or running.sees_processes("postgres")):
        return Sampler(server_pid, postgres_pid, pg_client=client, pg_memory=postgres)
    cli = running.docker_cli(service)
    return EngineSampler(cli, server_pid, postgres_pid, pg_client=client, pg_memory=postgres)


def settle(running: RunningScenario, timeout: float = 180, quiet: float = 1.0) -> float:
    """Wait until no client backend has been busy for `quiet` seconds; how long that took. When a load stops, the
    queries of the requests it leaves behind run on (a slow page for seconds), and would count in what follows."""
    count = session_counter(running)
    started = time.monotonic()
    quiet_since = started
    while time.monotonic() - quiet_since < quiet:
        if count()[1]:
            quiet_since = time.monotonic()
        if time.monotonic() - started > timeout:
            raise ScenarioError(f"Postgres still busy {timeout:.0f} s after the load stopped")
        time.sleep(0.05)
    return round(time.monotonic() - started - quiet, 1)
