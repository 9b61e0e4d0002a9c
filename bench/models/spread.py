"""A measurement repeated: its runs' median, lowest and highest, the one shape every table, page and set uses for it."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


def median_of(values: Iterable[float]) -> float:
    ordered = sorted(values)
    if not ordered:
        raise ValueError("the median of no values")
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2


@dataclass(frozen=True)
class Spread:
    """Runs of one metric: their median, lowest and highest."""

    median: float
    low: float
    high: float

    @classmethod
    def of(cls, values: Iterable[float]) -> Spread:
        listed = list(values)
        return cls(median_of(listed), min(listed), max(listed))

    def as_record(self) -> dict[str, float]:
        """As a set's JSON holds it (make incidents): its lowest, median and highest."""
        return {"min": self.low, "median": self.median, "max": self.high}


def recorded(values: Iterable[float | None]) -> dict[str, float]:
    """The spread of the values measured (None: not measured), as a set's JSON holds it; {} where none was."""
    measured = [value for value in values if value is not None]
    return Spread.of(measured).as_record() if measured else {}
