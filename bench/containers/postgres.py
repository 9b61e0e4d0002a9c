"""A scenario's Postgres seen from outside: a query through psql in its container, its busy client sessions read
from the backends' process titles (so that watching costs Postgres no query), a sampler that also keeps their
peak and the container's memory, and a wait until the queries a load left behind have finished."""

from __future__ import annotations

import json
import time
from pathlib import Path

from bench.containers.cgroup import container_memory_mb
from bench.containers.compose import RunningScenario, ScenarioError
from bench.containers.sampler import CLIENT_BACKEND, Sampler, server_pids


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


def client_sessions(postgres_pid: int, client: str | None = None) -> tuple[int, int]:
    """Client backends open, and those doing something (in a query or in a transaction), of every client or of
    the one at address `client`. Read from their process titles (`postgres: user db 172.18.0.3(40412) idle`),
    which show what pg_stat_activity's state does."""
    opened = busy = 0
    mine = None if client is None else f" {client}(".encode()
    for pid in server_pids(postgres_pid):
        try:
            title = Path(f"/proc/{pid}/cmdline").read_bytes().rstrip(b"\0")
        except OSError:
            continue
        if CLIENT_BACKEND.match(title) and (mine is None or mine in title):
            opened += 1
            busy += not title.endswith(b" idle")
    return opened, busy


def busy_sessions(postgres_pid: int) -> int:
    return client_sessions(postgres_pid)[1]


class PostgresSampler(Sampler):
    """The harness's Sampler (the app's processes: CPU, RSS, threads; Postgres's client sessions), and also the
    peaks of Postgres's sessions open and busy, of every client or of the one at address `client` (other apps may
    keep idle connections open beside it), and of its container's memory."""

    def __init__(
        self, server_pid: int | None, postgres_pid: int, postgres_container: str, client: str | None = None
    ) -> None:
        # A load with no server process (pgbench): Postgres's main process stands in, and only its figures count.
        super().__init__(server_pid or postgres_pid, postgres_pid)
        self.postgres_container, self.client = postgres_container, client
        self.busy_peak = self.sessions_peak = 0
        self.postgres_memory_mb_peak: float | None = None

    def _sample(self, starting: bool = False) -> None:
        super()._sample(starting)
        assert self.postgres_pid is not None
        opened, busy = client_sessions(self.postgres_pid, self.client)
        self.sessions_peak, self.busy_peak = max(self.sessions_peak, opened), max(self.busy_peak, busy)
        memory = container_memory_mb(self.postgres_container)
        if memory is not None:
            self.postgres_memory_mb_peak = max(self.postgres_memory_mb_peak or 0, memory)


def settle(postgres_pid: int, timeout: float = 180, quiet: float = 1.0) -> float:
    """Wait until no client backend has been busy for `quiet` seconds; how long that took. When a load stops, the
    queries of the requests it leaves behind run on (a slow page for seconds), and would count in what follows."""
    started = time.monotonic()
    quiet_since = started
    while time.monotonic() - quiet_since < quiet:
        if busy_sessions(postgres_pid):
            quiet_since = time.monotonic()
        if time.monotonic() - started > timeout:
            raise ScenarioError(f"Postgres still busy {timeout:.0f} s after the load stopped")
        time.sleep(0.05)
    return round(time.monotonic() - started - quiet, 1)
