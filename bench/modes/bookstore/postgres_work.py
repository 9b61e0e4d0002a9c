"""What Postgres did over a stretch of time (make bookstore's measurements): its container's CPU seconds and its
statements by kind, counted by Postgres itself (pg_stat_statements), less what it does idle in as long; and the
figures per request or per transaction made from them."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from bench.containers.cgroup import container_cpu_seconds
from bench.containers.compose import RunningScenario
from bench.containers.postgres import TRANSACTION_ENDS, statements_so_far
from bench.measure.bookstore import DATABASE

# Before each load, what Postgres does with nothing but the healthchecks running (the apps' /health, a SELECT every
# 5 s each, bookstore.yml; Docker's check of Postgres sends none): subtracted from what it did during the load and
# during pgbench, for as long. Two of the apps' intervals: a shorter window counts 0 or 1 of each app's probes.
IDLE_SECONDS = 10


@dataclass
class PostgresWork:
    """What Postgres did over a stretch of time: its container's CPU seconds and its statements by kind."""

    seconds: float = 0.0
    cpu_seconds: float | None = None
    statements: dict[str, float] = field(default_factory=dict)

    def minus(self, idle: PostgresWork) -> PostgresWork:
        """This work without what Postgres does idle (the healthchecks) in as long."""
        times = self.seconds / idle.seconds if idle.seconds else 0.0
        cpu = None
        if self.cpu_seconds is not None and idle.cpu_seconds is not None:
            cpu = max(0.0, self.cpu_seconds - times * idle.cpu_seconds)
        kinds = set(self.statements) | set(idle.statements)
        statements = {k: max(0.0, self.statements.get(k, 0) - times * idle.statements.get(k, 0)) for k in kinds}
        return PostgresWork(self.seconds, cpu, statements)

    @property
    def transactions(self) -> float:
        return sum(self.statements.get(kind, 0) for kind in TRANSACTION_ENDS)


@contextmanager
def postgres_work(running: RunningScenario) -> Iterator[PostgresWork]:
    """Measures what Postgres does inside the block. The statement counts are read outside the window of time
    and CPU: the psql that reads them is not the load's work."""
    container = running.container_ids()["postgres"]
    work, statements = PostgresWork(), statements_so_far(running, DATABASE)
    cpu, started = container_cpu_seconds(container), time.monotonic()
    yield work
    work.seconds, after = time.monotonic() - started, container_cpu_seconds(container)
    work.cpu_seconds = None if cpu is None or after is None else after - cpu
    counted = statements_so_far(running, DATABASE)
    work.statements = {kind: calls - statements.get(kind, 0) for kind, calls in counted.items()}


def measure_idle(running: RunningScenario, seconds: float = IDLE_SECONDS) -> PostgresWork:
    with postgres_work(running) as idle:
        time.sleep(min(IDLE_SECONDS, seconds))  # a short run's (a test's) for as long as its loads
    return idle


def ms_per(seconds: float | None, count: float) -> float | None:
    """Milliseconds per item, or None when there is no figure or nothing to divide by."""
    return None if seconds is None or count < 1 else round(1000 * seconds / count, 3)


def ratio(part: float, whole: float) -> float | None:
    return round(part / whole, 3) if whole >= 1 else None


def statements_per(statements: dict[str, float], served: int) -> dict[str, float]:
    """Statements per request by kind, the ones that happen at least once in 200 requests."""
    per = {kind: ratio(calls, served) or 0.0 for kind, calls in sorted(statements.items())}
    return {kind: value for kind, value in per.items() if value >= 0.005}
