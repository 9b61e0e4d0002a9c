"""A `make map` set's grid as docs/map.md shows it: per cell (I/O delay, CPU units, clients) the winner and its
lead, or how close every target came where none led; the tutorial's pair cell by cell; rankings and ratios."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from pathlib import Path

from bench.bench_run.record import BenchResult
from bench.models.spread import Spread
from bench.modes.map.render import TIE, Summary, winners
from bench.pages.facts import FactError, Facts
from bench.results import store

Cell = tuple[float, int, int]  # I/O delay (s), CPU units, clients
# Where no target leads by TIE, the cell names its winner unless every target came within this factor of it.
ALL_WITHIN = 1.2
AT_CEILING = 0.95  # every target at least this share of ab's ceiling: the cell measured the load, not the servers
PAIR = ("gunicorn-gevent", "gunicorn-sync")  # the tutorial's pair


@cache
def records(out: Path) -> list[BenchResult]:
    return store.load(out).records_of(BenchResult)


def summary(found: Facts) -> Summary:
    return winners(records(found.out))


def rps(found: Facts, cell: Cell, target: str) -> float:
    for record in records(found.out):
        if (record.delay, record.cpu_units, record.c) == cell and (record.label or record.target) == target:
            return record.throughput if record.ok else 0.0
    raise FactError(f"no {target} in the cell {cell} of {found.set_name}")


def rps_span(found: Facts, cell: Cell, targets: list[str]) -> Spread:
    """The targets' requests per second in one cell, as one spread."""
    return Spread.of([rps(found, cell, target) for target in targets])


@dataclass(frozen=True)
class GridRow:
    """One cell of the winners' table, its cells as the page prints them."""

    delay_ms: int
    cpu_units: int
    clients: int
    winner: str
    lead: str
    pair: str


def grid_rows(found: Facts) -> list[GridRow]:
    rows = []
    for cell, won in summary(found).items():
        ranking = won["ranking"]
        best, worst = ranking[0][1], ranking[-1][1]
        gevent, threads = (rps(found, cell, target) for target in PAIR)
        ratio = f"x{gevent / threads:.2f}"
        lead = "tie" if won["lead"] < TIE else f"x{won['lead']:.2f}"
        cell_records = [r for r in records(found.out) if (r.delay, r.cpu_units, r.c) == cell]
        if won["lead"] < TIE and best <= ALL_WITHIN * worst:
            at_ceiling = all(r.ok and (r.efficiency or 0) >= AT_CEILING for r in cell_records)
            low, high = f"{worst:.0f}", f"{best:.0f}"
            rates = low if low == high else f"{low}-{high}"
            winner = (
                f"all at the ceiling, {rates}/s"
                if at_ceiling
                else f"all within {100 * (best / worst - 1):.0f} %, {rates}/s"
            )
            pair = ratio
        else:
            winner = f"{won['winner']} {best:.0f}/s"
            pair = f"{gevent:.0f} vs {threads:.0f} ({ratio})"
        rows.append(GridRow(round(cell[0] * 1000), cell[1], cell[2], winner, lead, pair))
    return rows


def ranking(found: Facts, cell: Cell) -> list[tuple[str, float]]:
    """The cell's targets, the most requests per second first."""
    return list(summary(found)[cell]["ranking"])


def ratio_span(found: Facts, first: str, second: str, cells: list[Cell] | None = None) -> Spread:
    """The first target's requests per second over the second's in each cell named (every cell by default)."""
    chosen = cells or list(summary(found))
    return Spread.of([rps(found, cell, first) / rps(found, cell, second) for cell in chosen])


def ratio(found: Facts, first: str, second: str, cell: Cell) -> float:
    return rps(found, cell, first) / rps(found, cell, second)


def cells_where(found: Facts, cpu: bool | None = None, clients: int | None = None) -> list[Cell]:
    """The grid's cells with CPU work (cpu=True), without (False), at a number of clients."""
    return [
        cell for cell in summary(found)
        if (cpu is None or (cell[1] > 0) == cpu) and (clients is None or cell[2] == clients)
    ]  # fmt: skip


def cpu_span(found: Facts, targets: list[str], cells: list[Cell]) -> Spread:
    """The app's CPU per request of the targets in the cells named, as the set's page prints it (over the requests
    sent, however few)."""
    return Spread.of([
        1000 * (r.cpu_seconds or 0.0) / r.n for r in records(found.out)
        if (r.delay, r.cpu_units, r.c) in cells and (r.label or r.target) in targets
    ])  # fmt: skip


def field_span(found: Facts, field: str, cells: list[Cell] | None = None) -> Spread:
    """A field of every record in the cells named (every cell by default): cpu_ms_per_unit, efficiency."""
    chosen = cells or list(summary(found))
    values = [getattr(r, field) for r in records(found.out) if (r.delay, r.cpu_units, r.c) in chosen]
    return Spread.of([float(v) for v in values if v is not None])


def won_or_tied(found: Facts, target: str, cells: list[Cell]) -> tuple[int, int]:
    """In how many of the cells the target won, or came within TIE of the winner, of how many."""
    count = 0
    for cell in cells:
        ranking = summary(found)[cell]["ranking"]
        count += rps(found, cell, target) * TIE > ranking[0][1]
    return count, len(cells)
