"""What a renderer is given: a result set's metadata and records as JSON objects, in today's vocabulary, read
through bench/results (the one place results.json is read and written)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.results import store


@dataclass
class Document:
    metadata: dict[str, Any]
    results: list[dict[str, Any]] = field(default_factory=list)

    @property
    def mode(self) -> str:
        return str(self.metadata["mode"])


def read(out: Path) -> Document:
    return Document(*store.read_json(out))
