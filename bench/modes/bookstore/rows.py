"""The rows of a `make bookstore` set, what its tables and charts both draw: one per load, number of clients and
target, with repeats the run of median throughput with the medians of all runs."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from bench.models.spread import median_of
from bench.modes.bookstore.record import BookstoreResult
from bench.render import shared

# With repeats, a row is its runs' median: these figures as their medians, throughput and share with their range.
MEDIANS = (
    "rps", "vs_database", "pgbench_tps", "p50_ms", "p99_ms", "app_cpu_ms_per_request", "pg_cpu_ms_per_request",
    "pgbench_pg_cpu_ms_per_transaction", "pg_cpu_ms_per_transaction", "pgbench_at_app_rate_pg_cpu_ms_per_transaction",
    "db_via_cpu_ms_per_request",
)  # fmt: skip


@dataclass(frozen=True)
class Row:
    """One load at one number of clients for one target: a single run as it is, or with repeats the run of median
    throughput, its MEDIANS figures the medians of all runs; a load that failed in any run, that run."""

    record: BookstoreResult
    runs: int
    panel: str  # the load, and its clients where the set swept the load over several numbers of them
    steadiness: shared.Steadiness | None
    rps_range: tuple[float, float] | None = None  # with repeats, the lowest and highest throughput
    share_range: tuple[float, float] | None = None  # and share of the database alone

    @property
    def ok(self) -> bool:
        return self.record.ok


def ordered(records: list[BookstoreResult]) -> list[BookstoreResult]:
    """By load (in the run's order), then clients, then target: each load's targets next to each other."""
    loads = list(dict.fromkeys(record.load for record in records))
    return sorted(records, key=lambda record: (loads.index(record.load), record.clients))


def throughput(record: BookstoreResult) -> float:
    return record.rps or 0.0  # every OK record has its throughput


def summarise(records: list[BookstoreResult]) -> list[Row]:
    """One row per load, number of clients and target: a single run as it is; with repeats the run of median
    throughput, its figures replaced by the medians of all runs, with the range of throughput and share and how
    many runs kept the CPU steady. A load that failed in any run shows that failure."""
    groups: dict[tuple[str, int, str], list[BookstoreResult]] = {}
    for record in ordered(records):
        groups.setdefault((record.load, record.clients, record.target), []).append(record)
    clients_of: dict[str, set[int]] = {}
    for load, clients, _ in groups:
        clients_of.setdefault(load, set()).add(clients)
    rows = []
    for (load, clients, _), runs in groups.items():
        panel = load if len(clients_of[load]) == 1 else f"{load}, {clients} clients"
        steadiness = shared.steadiness(run.cpu_probe for run in runs)
        failed = [run for run in runs if not run.ok]
        if len(runs) == 1 or failed:
            rows.append(Row((failed or runs)[0], len(runs), panel, steadiness))
            continue
        by_rps = sorted(runs, key=throughput)
        medians: dict[str, Any] = {}  # fields of several types, each the median of its runs
        for key in MEDIANS:
            values = [value for run in runs if (value := getattr(run, key)) is not None]
            if values:
                medians[key] = round(median_of(values), 3)
        shares = sorted(run.vs_database for run in runs if run.vs_database is not None)
        rows.append(
            Row(
                replace(by_rps[(len(runs) - 1) // 2], **medians),
                len(runs),
                panel,
                steadiness,
                (throughput(by_rps[0]), throughput(by_rps[-1])),
                (shares[0], shares[-1]) if shares else None,
            )  # fmt: skip
        )
    return rows


def number(value: float | None, form: str = "{:.2f}") -> str:
    return "–" if value is None else form.format(value)


def rps(value: float | None) -> str:
    return "–" if value is None else shared.rps(value)
