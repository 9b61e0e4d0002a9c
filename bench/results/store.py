"""OUT/results.json, the one file every table, chart and page of a set is drawn from: the one place it is written
and read. A run writes it after every record (a run stopped half-way keeps what it measured), in today's format;
a read gives today's vocabulary whatever version wrote the file (upgrade.py), as JSON objects (read_json) or with
its metadata typed and its records typed as the reader asks (load, records_of): each mode's reader knows its own
record, and this file none of them."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from bench.results import upgrade
from bench.results.records import Metadata, Record

FILE = "results.json"
# The version written into every new file. 1: every set without a "format" key; 2: one vocabulary across the modes.
FORMAT = 2

Kind = TypeVar("Kind", bound=Record)


class FormatError(ValueError):
    """A results.json this harness cannot read: not a result set, or written by a newer harness."""


@dataclass(frozen=True)
class LoadedSet:
    """A result set as read: its metadata typed, its records as JSON objects in today's vocabulary until a reader
    types them as its mode's kind (records_of): the kind is the mode's own, so the file's format knows none of them."""

    metadata: Metadata
    raw: list[dict[str, Any]]
    version: int  # the format the file was written in
    path: Path  # its results.json, for the errors

    @property
    def mode(self) -> str:
        return self.metadata.mode

    def records_of(self, kind: type[Kind]) -> list[Kind]:
        """Every record as `kind`: what the renderer of the set's mode reads."""
        typed = []
        for index, record in enumerate(self.raw):
            try:
                typed.append(kind.from_json(record))
            except TypeError as error:  # a key its kind needs is missing
                raise FormatError(f"{self.path}: record {index} is no {kind.__name__}: {error}") from None
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
    """The set, its metadata typed; its records typed by the reader that knows their kind (records_of)."""
    version, metadata, records = read_versioned(out)
    try:
        return LoadedSet(Metadata.from_json(metadata), records, version, out / FILE)
    except TypeError as error:
        raise FormatError(f"{out / FILE}: its metadata lacks what every set records: {error}") from None


def write(out: Path, metadata: dict[str, Any], records: list[dict[str, Any]]) -> None:
    """The whole set so far, in today's format."""
    text = json.dumps({"format": FORMAT, "metadata": metadata, "results": records}, indent=2) + "\n"
    (out / FILE).write_text(text)
