"""Every kind of result set, by the mode that makes it: the record the mode writes and the renderer that draws it.
`render(out)` draws any set again from its results.json (`python -m bench.render OUT`), as its mode drew it when
its run ended. The one module that knows every mode: above them all, imported by none of them."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

from bench.bench_run import render as bench
from bench.bench_run.record import BenchResult
from bench.modes.bookstore import render as bookstore
from bench.modes.bookstore.record import BookstoreResult
from bench.modes.incidents import render as incidents
from bench.modes.incidents.record import IncidentResult
from bench.modes.labs import render as labs
from bench.modes.labs.record import LabResult
from bench.modes.latency import render as latency
from bench.modes.latency.record import LatencyResult
from bench.modes.map import render as map
from bench.modes.recommend import render as recommend
from bench.modes.slowclients import render as slowclients
from bench.modes.slowclients.record import SlowClientResult
from bench.modes.yourapp import render as yourapp
from bench.modes.yourapp.record import YourAppResult
from bench.results import store
from bench.results.records import Record


@dataclass(frozen=True)
class Kind:
    """What a mode's sets hold and how they are drawn: its record, and its renderer (a module with render(out,
    loaded))."""

    record: type[Record]
    renderer: ModuleType


# make bench's mode draws make sweep's and make overload's sets too; make map and make recommend write its record.
KINDS: dict[str, Kind] = {
    "bench": Kind(BenchResult, bench),
    "sweep": Kind(BenchResult, bench),
    "overload": Kind(BenchResult, bench),
    "map": Kind(BenchResult, map),
    "latency": Kind(LatencyResult, latency),
    "slowclients": Kind(SlowClientResult, slowclients),
    "labs": Kind(LabResult, labs),
    "bookstore": Kind(BookstoreResult, bookstore),
    "incidents": Kind(IncidentResult, incidents),
    "yourapp": Kind(YourAppResult, yourapp),
    "recommend": Kind(BenchResult, recommend),
}


def kind_of(mode: str) -> Kind:
    """A mode this version does not know (a set from a newer harness) as make bench's: any closed-loop record fills
    its table."""
    return KINDS.get(mode, KINDS["bench"])


def render(out: Path) -> None:
    loaded = store.load(out)
    kind_of(loaded.mode).renderer.render(out, loaded)
