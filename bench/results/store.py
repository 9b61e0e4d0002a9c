"""OUT/results.json, the one file every table, chart and page of a set is drawn from: the one place it is written
and read. A run writes it after every record (a run stopped half-way keeps what it measured), in today's format;
a read gives today's vocabulary whatever version wrote the file (upgrade.py), as JSON objects (read_json) or as the
records typed by the mode that made the set (load)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from bench.results import upgrade
from bench.results.bench import BenchResult
from bench.results.bookstore import BookstoreResult
from bench.results.incidents import IncidentResult
from bench.results.labs import LabResult
from bench.results.latency import LatencyResult
from bench.results.records import Metadata, Record
from bench.results.slowclients import SlowClientResult
from bench.results.yourapp import YourAppResult

FILE = "results.json"
# The version written into every new file. 1: every set without a "format" key; 2: one vocabulary across the modes.
FORMAT = 2

# Each mode's record; make bench's kinds (sweep, overload) and make map write make bench's.
RECORD_KINDS: dict[str, type[Record]] = {
    "bench": BenchResult,
    "sweep": BenchResult,
    "overload": BenchResult,
    "map": BenchResult,
    "latency": LatencyResult,
    "slowclients": SlowClientResult,
    "labs": LabResult,
    "bookstore": BookstoreResult,
    "incidents": IncidentResult,
    "yourapp": YourAppResult,
    "recommend": BenchResult,
}
Kind = TypeVar("Kind", bound=Record)


class FormatError(ValueError):
    """A results.json this harness cannot read: not a result set, or written by a newer harness."""


@dataclass(frozen=True)
class LoadedSet:
    """A result set as read: its metadata and its records, typed."""

    metadata: Metadata
    records: list[Record]
    version: int  # the format the file was written in

    @property
    def mode(self) -> str:
        return self.metadata.mode

    def records_of(self, kind: type[Kind]) -> list[Kind]:
        """The records as the renderer of the set's mode reads them: every one of them of its mode's kind."""
        typed = [record for record in self.records if isinstance(record, kind)]
        if len(typed) != len(self.records):
            raise FormatError(f"a {self.mode} set whose records are not all {kind.__name__}")
        return typed


def version_of(document: object, path: Path) -> int:
    if not isinstance(document, dict) or not {"metadata", "results"} <= document.keys():
        raise FormatError(f"{path}: not a result set (no metadata and results)")
    version = document.get("format", 1)
    if not isinstance(version, int) or not 1 <= version <= FORMAT:
        raise FormatError(f"{path}: format {version!r}, and this harness reads formats 1 to {FORMAT}: update it")
    return version


def read_versioned(out: Path) -> tuple[int, dict[str, Any], list[dict[str, Any]]]:
    path = out / FILE
    document = json.loads(path.read_text())
    version = version_of(document, path)
    metadata, records = document["metadata"], document["results"]
    if version == 1:
        metadata = upgrade.metadata(metadata)
        records = [upgrade.record(record, metadata["mode"]) for record in records]
    return version, metadata, records


def read_json(out: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The set's metadata and records as JSON objects, in today's vocabulary."""
    _, metadata, records = read_versioned(out)
    return metadata, records


def load(out: Path) -> LoadedSet:
    """The set typed: each record as its mode's kind (a mode this harness does not know, from a newer one, as make
    bench's, whose table any closed-loop record fills)."""
    version, metadata, records = read_versioned(out)
    kind = RECORD_KINDS.get(metadata["mode"], BenchResult)
    typed = []
    for index, record in enumerate(records):
        try:
            typed.append(kind.from_json(record))
        except TypeError as error:  # a key its kind needs is missing
            raise FormatError(f"{out / FILE}: record {index} is no {kind.__name__}: {error}") from None
    try:
        return LoadedSet(Metadata.from_json(metadata), typed, version)
    except TypeError as error:
        raise FormatError(f"{out / FILE}: its metadata lacks what every set records: {error}") from None


def write(out: Path, metadata: dict[str, Any], records: list[dict[str, Any]]) -> None:
    """The whole set so far, in today's format."""
    text = json.dumps({"format": FORMAT, "metadata": metadata, "results": records}, indent=2) + "\n"
    (out / FILE).write_text(text)
