"""Render a result set again from its OUT/results.json alone: results.md, the charts and index.html, by the
renderer of the mode that made it. `python -m bench.render OUT`; every mode calls it at the end of its run."""

from __future__ import annotations

import sys
from pathlib import Path
from types import ModuleType

from bench import bookstore_report, document, labs_report, latency_report, map_report, report, slowclients_report

# Each mode's renderer: a module with render(out, document).
RENDERERS: dict[str, ModuleType] = {
    "bench": report,
    "sweep": report,
    "overload": report,
    "latency": latency_report,
    "slowclients": slowclients_report,
    "map": map_report,
    "labs": labs_report,
    "bookstore": bookstore_report,
}


def render(out: Path) -> None:
    found = document.read(out)
    # A mode this version does not know (a set from a newer harness) still gets its records' table.
    RENDERERS.get(found.mode, report).render(out, found)


if __name__ == "__main__":
    for folder in sys.argv[1:] or sys.exit("usage: python -m bench.render OUT [OUT ...]"):
        render(Path(folder))
