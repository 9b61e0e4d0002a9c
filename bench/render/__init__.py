"""The renderers: a result set drawn again from its OUT/results.json alone (results.md, the charts, index.html),
by the renderer of the mode that made it. No Docker, no load: any machine, long after the run.

`render(out)` is the one dispatch; every result set calls it when its run ends, and `python -m bench.render OUT`
calls it for a committed set."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

from bench.render import bench, bookstore, document, incidents, labs, latency, map, slowclients

# Each mode's renderer: a module with render(out, document). bench.py draws make bench, sweep and overload.
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
}


def render(out: Path) -> None:
    found = document.read(out)
    # A mode this version does not know (a set from a newer harness) still gets its records' table.
    RENDERERS.get(found.mode, bench).render(out, found)
