"""A result set's OUT/results.json, the one file every table, chart and page of the set is rendered from: the one
place it is written and read. Records are stored as JSON objects: each mode builds its records typed (for example
bench.measure.BenchRecord) and turns them to JSON with their own `to_json`, and the renderers read them back as
they were written, since the committed sets span every version of the harness."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

FILE = "results.json"


@dataclass
class Document:
    metadata: dict[str, Any]
    results: list[dict[str, Any]] = field(default_factory=list)

    @property
    def mode(self) -> str:
        # Sets from before "mode" said "sweep": true or false.
        return self.metadata.get("mode") or ("sweep" if self.metadata.get("sweep") else "bench")


def read(out: Path) -> Document:
    document = json.loads((out / FILE).read_text())
    return Document(document["metadata"], document["results"])


def write(out: Path, document: Document) -> None:
    """The whole set so far: written after every record, so a run stopped half-way keeps what it measured."""
    text = json.dumps({"metadata": document.metadata, "results": document.results}, indent=2) + "\n"
    (out / FILE).write_text(text)
