"""The database alone, the reference of each of make bookstore's rounds: the pgbench scripts made from the SQL a
target sends (captured per endpoint, sql_capture.py), and pgbench running them from a container of the postgres
image at the concurrency the database sees from the target, at full speed or paced to the target's rate."""

from __future__ import annotations

import json
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from bench.containers import postgres as postgres_seen
from bench.containers.compose import RunningScenario
from bench.loadgen import pgbench
from bench.measure.bookstore import (
    DATABASE,
    LOADS,
    MARKER_PREFIX,
    PAGE,
    PAGES,
    POST_BODY,
    BookstoreLoad,
    BookstoreScenario,
    remove_writes,
)
from bench.measure.host_probe import host_cpu_probe
from bench.modes.bookstore.postgres_work import PostgresWork, ms_per, postgres_work, statements_per
from bench.modes.bookstore.record import AtAppRate, BookstoreResult, DatabaseAlone
from bench.modes.bookstore.sql_capture import capture

POSTGRES_IMAGE = "postgres:17"  # pgbench from the image the scenario's Postgres runs


def scripts(running: RunningScenario, service: str, scale: int, reads_end_with: str) -> dict[str, str]:
    """The pgbench scripts of this target: the fast read, the list (one template, a variable per offset) and
    the write. Captured at two values of each input, which must give the same SQL; the reads end as the app's do."""
    end = reads_end_with.upper()
    ids = (max(1, scale // 3), max(2, scale // 2 + 7))  # far from the page size and from each other
    captured = [(i, capture(running, service, "GET", f"/author/{i}")) for i in ids]
    reads = pgbench.in_transaction(captured[0][1], pgbench.template(captured, "id"), end)
    offsets = (PAGE * 3, PAGE * 7)
    captured = [(o, capture(running, service, "GET", f"/author?limit={PAGE}&offset={o}")) for o in offsets]
    pages = pgbench.in_transaction(captured[0][1], pgbench.template(captured, "offset"), end)
    # One marker for every target's pgbench writes: the same script, so that targets can share a reference.
    body = json.dumps(POST_BODY).replace("@@MARKER@@", f"{MARKER_PREFIX}pgbench")
    written = capture(running, service, "POST", "/author", body)
    write = pgbench.in_transaction(written, pgbench.fixed(written), "COMMIT")
    texts = {"author.sql": pgbench.script(pgbench.Variable("id", 1, scale), reads), "write.sql": "\n".join(write)}
    for load in LOADS:
        if load.offset_share is not None:
            first = load.first_offset(scale)
            variable = pgbench.Variable("offset", first, first + PAGE * (PAGES - 1), PAGE)
            texts[f"{load.name}.sql"] = pgbench.script(variable, pages)
    texts["write.sql"] += "\n"
    return texts


def weights(load: BookstoreLoad) -> dict[str, int]:
    """Which scripts pgbench runs for a load, each with its share in percent (the same mix as wrk's)."""
    if load.writes_per_thousand:
        writes = load.writes_per_thousand // 10
        return {"author.sql": 100 - writes, "write.sql": writes}
    return {"author.sql" if load.offset_share is None else f"{load.name}.sql": 100}


def measure_database(
    running: RunningScenario,
    load: BookstoreLoad,
    clients: int,
    seconds: int,
    script_dir: Path,
    protocol: str,
    idle: PostgresWork,
    rate: float | None = None,
) -> DatabaseAlone:
    scripts_in = {f"/scripts/{name}": weight for name, weight in weights(load).items()}
    inside = pgbench.command(scripts_in, clients, seconds, DATABASE, protocol, rate)
    password = running.environment.get("POSTGRES_PASSWORD") or "playground"
    command = pgbench.container_command(inside, running.network(), script_dir, password, POSTGRES_IMAGE)
    sampler = postgres_seen.sampler(running, None)
    with postgres_work(running) as work, sampler:
        finished = subprocess.run(command, capture_output=True, text=True)
    shown = pgbench.shown(command)
    try:
        result = pgbench.parse(finished.stdout + finished.stderr)
    except ValueError as error:
        return DatabaseAlone(pgbench_command=shown, pgbench_problem=str(error))
    net = work.minus(idle)
    return DatabaseAlone(
        pgbench_command=shown,
        pgbench_tps=round(result.tps, 1),
        pgbench_transactions=result.transactions,
        pgbench_failed=result.failed,
        pgbench_latency_ms=result.latency_ms,
        # Postgres's own count, as for the app: the same statements per transaction as the app's per request, or
        # pgbench does not stand for the app. Not BEGIN and COMMIT under --protocol prepared: pg_stat_statements
        # does not count a transaction command sent as a prepared statement.
        pgbench_statements_per_transaction=statements_per(net.statements, result.transactions),
        pgbench_pg_cpu_ms_per_transaction=ms_per(net.cpu_seconds, result.transactions),
        pgbench_pg_cpu_ms_per_transaction_gross=ms_per(work.cpu_seconds, result.transactions),
        pgbench_busy_peak=sampler.usage.pg_busy_peak,
        pgbench_pg_memory_mb_peak=sampler.usage.pg_memory_mb_peak,
        pgbench_problem=f"{result.failed} transactions failed" if result.failed else None,
    )


@contextmanager
def scripts_folder(record: BookstoreResult) -> Iterator[Path]:
    """The record's pgbench scripts in a folder of their own, for pgbench's container to mount."""
    with tempfile.TemporaryDirectory(prefix="bookstore-pgbench-") as directory:
        script_dir = Path(directory)
        script_dir.chmod(0o755)  # pgbench reads them as its image's user
        for name, text in (record.pgbench_scripts or {}).items():
            (script_dir / name).write_text(text)
        yield script_dir


def reference(
    running: BookstoreScenario,
    load: BookstoreLoad,
    record: BookstoreResult,
    idle: PostgresWork,
    rate: float | None = None,
) -> tuple[DatabaseAlone, dict[str, float]]:
    """pgbench running the record's scripts at its database clients, Postgres alone, at full speed or paced to a
    rate: the record's pgbench fields, and the host's CPU probes around it (by moment, host_probe.MOMENTS)."""
    protocol = record.pgbench_protocol
    assert protocol is not None, "bookstore_fields gives every record of a run its protocol; older sets lack it"
    with scripts_folder(record) as script_dir:
        before = host_cpu_probe()
        measured = measure_database(running, load, record.db_clients, record.seconds, script_dir, protocol, idle, rate)
        after = host_cpu_probe()
    remove_writes(running)
    return measured, {"pgbench_before": before, "after": after}


def at_app_rate(
    running: BookstoreScenario, load: BookstoreLoad, record: BookstoreResult, idle: PostgresWork
) -> AtAppRate:
    """pgbench paced to the target's own requests per second: what Postgres spends per transaction at the app's
    pace, its backends waiting between statements as they do behind the app, rather than at pgbench's full speed."""
    paced, _ = reference(running, load, record, idle, rate=record.rps)
    return AtAppRate(
        pgbench_at_app_rate_command=paced.pgbench_command,
        pgbench_at_app_rate_tps=paced.pgbench_tps,
        pgbench_at_app_rate_pg_cpu_ms_per_transaction=paced.pgbench_pg_cpu_ms_per_transaction,
        pgbench_at_app_rate_problem=paced.pgbench_problem,
    )
