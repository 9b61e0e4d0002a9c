"""The rows of a `make bench`, `make sweep` or `make overload` set, what its table and charts both draw: one per
target and load, with repeats the run of median throughput and the spread of all."""

from __future__ import annotations

from dataclasses import dataclass, replace

from bench.bench_run.record import BenchResult
from bench.models.ceiling import efficiency
from bench.models.spread import Spread, median_of
from bench.render import shared


def counted(records: list[BenchResult]) -> list[BenchResult]:
    """The runs the tables count: a run measured again because the CPU moved (RERUN=k) counts by its re-run, and
    the reference re-measured for that re-run is not a target's run."""
    return [record for record in records if not record.superseded and not record.rerun_reference]


@dataclass(frozen=True)
class Row:
    """One row of the table: a target under one load. With repeats, the run of median throughput, the spread of
    all its runs beside it; a load that failed in any run, that run."""

    record: BenchResult  # the run the row shows
    runs: int
    steadiness: shared.Steadiness | None
    efficiency: float | None  # of the median throughput; a failed row's own
    vs_reference: float | None  # the median of the runs' shares of slow_api alone; a failed row's own
    spread: Spread | None = None  # none on a failed row
    # With repeats: the targets under the same load whose spread overlaps this one's, which this run does not tell
    # apart from it.
    within_spread_of: list[str] | None = None

    @property
    def ok(self) -> bool:
        return self.record.ok


def row_key(record: BenchResult) -> tuple[object, ...]:
    """What makes a row: the target (as configured: make map's and make recommend's label, and where the app ran)
    under one load."""
    return (record.scenario, record.target, record.label, record.placement, record.n, record.c, record.delay,
            record.cpu_units, record.client)  # fmt: skip


def summarise(records: list[BenchResult]) -> list[Row]:
    """One row per target and load: with repeats (REPEAT=k), the run with the median throughput, and the
    spread of all k runs beside it. A load that failed in any run shows that failure. A run measured again
    because the CPU moved (RERUN=k) counts by its re-run only, and the reference re-measured for it is not a row."""
    groups: dict[tuple[object, ...], list[BenchResult]] = {}
    for record in counted(records):
        groups.setdefault(row_key(record), []).append(record)
    summary = []
    for runs in groups.values():
        steadiness = shared.steadiness(run.cpu_probe for run in runs)
        failed = [run for run in runs if not run.ok]
        if failed:
            summary.append(Row(failed[0], len(runs), steadiness, failed[0].efficiency, failed[0].vs_reference))
            continue
        by_rps = sorted(runs, key=lambda run: run.throughput)
        chosen = by_rps[(len(by_rps) - 1) // 2]
        spread = Spread.of(run.throughput for run in runs)
        shares = [run.vs_reference for run in runs if run.vs_reference is not None]
        share = round(median_of(shares), 3) if shares else chosen.vs_reference
        fraction = round(efficiency(spread.median, chosen.ceiling_rps), 3)
        summary.append(Row(chosen, len(runs), steadiness, fraction, share, spread))
    return [with_overlaps(row, summary) for row in summary]


def with_overlaps(row: Row, summary: list[Row]) -> Row:
    """Two targets under the same load whose ranges of throughput overlap are not told apart by this run."""
    if row.spread is None or row.runs == 1:
        return row
    load = row_key(row.record)[3:]  # where the app ran, and the load
    overlapping = [
        other.record.target
        for other in summary
        if other is not row and other.spread is not None and row_key(other.record)[3:] == load
        and other.spread.low <= row.spread.high and row.spread.low <= other.spread.high
    ]  # fmt: skip
    return replace(row, within_spread_of=overlapping)
