"""What the reader's database did for their app (make yourapp with a Postgres service in SERVICES=): its container's
CPU seconds and the statements it ran, around each request type sent alone and around each load, so that the page
can say whether Python or the database binds the app, as make bookstore's page does for its own.

The database is the services file's first service whose image is Postgres's. Its statements are counted by Postgres
itself (pg_stat_statements, over every database of the server) where the file loads the module
(`command: [postgres, -c, shared_preload_libraries=pg_stat_statements]`); without it, the CPU alone, and the page
says how to get the counts."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path

import yaml

from bench.containers.cgroup import container_cpu_seconds
from bench.containers.compose import RunningScenario

# Every statement of every database, but the ones that read the counts (this module's own, which name the view).
STATEMENTS = "SELECT coalesce(sum(calls), 0) FROM pg_stat_statements WHERE query NOT LIKE '%pg_stat_statements%'"


@dataclass(frozen=True)
class Database:
    """The reader's Postgres: its service, the user psql connects as, and whether it counts statements."""

    service: str
    user: str
    counts_statements: bool = False


@dataclass
class DatabaseWork:
    """What the database did inside a block: its container's CPU seconds and the statements it ran."""

    cpu_seconds: float | None = None
    statements: int | None = None


def postgres_service(services_file: Path | None) -> Database | None:
    """The services file's first service run from Postgres's image, with the user its environment names."""
    if services_file is None:
        return None
    services = (yaml.safe_load(services_file.read_text()) or {}).get("services") or {}
    for name, service in services.items():
        image = str((service or {}).get("image") or "")
        if image.split("/")[-1].startswith("postgres"):
            environment = service.get("environment") or {}
            if isinstance(environment, list):  # KEY=VALUE items
                environment = dict(item.split("=", 1) for item in environment if "=" in item)
            return Database(name, str(environment.get("POSTGRES_USER") or "postgres"))
    return None


def psql(running: RunningScenario, database: Database, sql: str) -> subprocess.CompletedProcess[str]:
    """One statement through psql in the database's container, in the `postgres` database (from which
    pg_stat_statements shows every database's statements)."""
    command = ["exec", "-T", database.service, "psql", "--no-psqlrc", "-At", "-U", database.user, "-d", "postgres"]
    return running.compose(*command, "-c", sql, check=False)


def start_counting(running: RunningScenario, database: Database) -> Database:
    """The database, with `counts_statements` true where Postgres loads pg_stat_statements."""
    made = psql(running, database, "CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
    counts = made.returncode == 0 and psql(running, database, STATEMENTS).returncode == 0
    return replace(database, counts_statements=counts)


def statements_so_far(running: RunningScenario, database: Database) -> int | None:
    if not database.counts_statements:
        return None
    counted = psql(running, database, STATEMENTS)
    return int(counted.stdout.strip()) if counted.returncode == 0 else None


@contextmanager
def database_work(running: RunningScenario, database: Database | None) -> Iterator[DatabaseWork]:
    """Measures what the database does inside the block (nothing where there is no database). The statements are
    read outside the window of CPU time: the psql that reads them is not the app's work."""
    work = DatabaseWork()
    if database is None:
        yield work
        return
    container = running.container_ids()[database.service]
    statements = statements_so_far(running, database)
    cpu = container_cpu_seconds(container)
    yield work
    after = container_cpu_seconds(container)
    work.cpu_seconds = None if cpu is None or after is None else after - cpu
    counted = statements_so_far(running, database)
    work.statements = None if statements is None or counted is None else counted - statements


def per_request(work: DatabaseWork, requests: int) -> tuple[float | None, float | None]:
    """The database's CPU milliseconds and statements per request."""
    if requests < 1:
        return None, None
    cpu = None if work.cpu_seconds is None else round(work.cpu_seconds * 1000 / requests, 3)
    statements = None if work.statements is None else round(work.statements / requests, 2)
    return cpu, statements
