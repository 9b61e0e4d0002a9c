"""The renderers: a result set drawn again from its OUT/results.json alone (results.md, the charts, index.html),
by the renderer of the mode that made it, from the set as bench/results loads it, typed. No Docker, no load: any
machine, long after the run.

Each mode calls its own renderer when its run ends; `render(out)`, the dispatch, renders a set by the mode that made
it: `python -m bench.render OUT` for a committed set."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

from bench.render import bench, bookstore, incidents, labs, latency, map, recommend, slowclients, yourapp
from bench.results import store

# Each mode's renderer: a module with render(out, loaded). bench.py draws make bench, sweep and overload.
RENDERERS: dict[str, ModuleType] = {
    "bench": bench,
    "sweep": bench,
    "overload": bench,
    "latency": latency,
    "slowclients": slowclients,
    "map": map,
    "labs": labs,
    "bookstore": bookstore,
    "incidents": incidents,
    "yourapp": yourapp,
    "recommend": recommend,
}


def render(out: Path) -> None:
    loaded = store.load(out)
    # A mode this version does not know (a set from a newer harness) still gets its records' table.
    RENDERERS.get(loaded.mode, bench).render(out, loaded)
