"""OUT/results.json, the one file every table, chart and page of a set is drawn from: the one place it is written
and read. A run writes it after every record (a run stopped half-way keeps what it measured), in today's format;
a read gives today's vocabulary whatever version wrote the file (upgrade.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from bench.results import upgrade

FILE = "results.json"
# The version written into every new file. 1: every set without a "format" key; 2: one vocabulary across the modes.
FORMAT = 2


class FormatError(ValueError):
    """A results.json this harness cannot read: not a result set, or written by a newer harness."""


def version_of(document: object, path: Path) -> int:
    if not isinstance(document, dict) or not {"metadata", "results"} <= document.keys():
        raise FormatError(f"{path}: not a result set (no metadata and results)")
    version = document.get("format", 1)
    if not isinstance(version, int) or not 1 <= version <= FORMAT:
        raise FormatError(f"{path}: format {version!r}, and this harness reads formats 1 to {FORMAT}: update it")
    return version


def read_json(out: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The set's metadata and records as JSON objects, in today's vocabulary."""
    path = out / FILE
    document = json.loads(path.read_text())
    version = version_of(document, path)
    metadata, records = document["metadata"], document["results"]
    if version == 1:
        metadata = upgrade.metadata(metadata)
        records = [upgrade.record(record, metadata["mode"]) for record in records]
    return metadata, records


def write(out: Path, metadata: dict[str, Any], records: list[dict[str, Any]]) -> None:
    """The whole set so far, in today's format."""
    text = json.dumps({"format": FORMAT, "metadata": metadata, "results": records}, indent=2) + "\n"
    (out / FILE).write_text(text)
