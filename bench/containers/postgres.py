"""A scenario's Postgres seen from outside: a query through psql in its container, its busy client sessions read
from the backends' process titles (so that watching costs Postgres no query), a sampler that also keeps their
peak and the container's memory, and a wait until the queries a load left behind have finished."""

from __future__ import annotations

import time
from pathlib import Path

from bench.containers.cgroup import container_memory_mb
from bench.containers.compose import RunningScenario, ScenarioError
from bench.containers.sampler import CLIENT_BACKEND, Sampler, server_pids


def query(running: RunningScenario, database: str, sql: str) -> str:
    """One statement through psql in the postgres container; its rows as text."""
    command = ["exec", "-T", "postgres", "psql", "--no-psqlrc", "-At", "-U", "postgres", "-d", database, "-c", sql]
    return running.compose(*command).stdout.strip()


def busy_sessions(postgres_pid: int) -> int:
    """Client backends doing something: in a query or in a transaction. Read from their process titles, which
    show what pg_stat_activity's state does."""
    busy = 0
    for pid in server_pids(postgres_pid):
        try:
            title = Path(f"/proc/{pid}/cmdline").read_bytes().rstrip(b"\0")
        except OSError:
            continue
        busy += bool(CLIENT_BACKEND.match(title)) and not title.endswith(b" idle")
    return busy


class PostgresSampler(Sampler):
    """The harness's Sampler (the app's processes: CPU, RSS, threads; Postgres's client sessions), and also the
    peak of Postgres's busy sessions and of its container's memory."""

    def __init__(self, server_pid: int | None, postgres_pid: int, postgres_container: str) -> None:
        # A load with no server process (pgbench): Postgres's main process stands in, and only its figures count.
        super().__init__(server_pid or postgres_pid, postgres_pid)
        self.postgres_container = postgres_container
        self.busy_peak = 0
        self.postgres_memory_mb_peak: float | None = None

    def _sample(self, starting: bool = False) -> None:
        super()._sample(starting)
        assert self.postgres_pid is not None
        self.busy_peak = max(self.busy_peak, busy_sessions(self.postgres_pid))
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
