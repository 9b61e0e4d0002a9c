"""A record of make labs: one target of one failure lab, broken or fixed (bench/modes/labs/run.py writes it).

Each lab measures its own figures (bench/modes/labs/render.py, COLUMNS, names them lab by lab): they are kept in the
record's `extra`, untyped, by design, as the lab wrote them."""

from __future__ import annotations

from dataclasses import dataclass, field

from bench.results.records import Record


@dataclass(frozen=True, kw_only=True)
class LabResult(Record):
    lab: str
    variant: str  # how this target stands to the lab's failure: broken, fixed, unaffected, ...
    setting: str  # what differs in it, in a few words
    commands: list[list[str]] = field(default_factory=list)  # the load's, as run

    def figure(self, key: str) -> object:
        """One of the lab's own figures, None where this record has none."""
        return self.extra.get(key)
