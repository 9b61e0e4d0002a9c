"""What the records of every mode share, typed."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class CpuProbe:
    """The machine's CPU speed around one measurement: the seconds a fixed pure-Python loop took, per place (make
    bench: each role's engine and cores; make bookstore: the host) and moment; how far each place's times moved
    (the longest over the shortest); and whether all kept within the harness's bound. Older bookstore sets timed
    the loop without judging it: their `steady` is None."""

    seconds: dict[str, dict[str, float]]  # place -> moment ("before", "after", ...) -> seconds
    moved: dict[str, float]  # place -> longest / shortest; empty where no probe ran
    steady: bool | None

    @classmethod
    def judged(cls, seconds: dict[str, dict[str, float]], unsteady_factor: float) -> CpuProbe:
        moved = {}
        for place, times in seconds.items():
            timed = [value for value in times.values() if value]  # a probe that did not run leaves 0 or nothing
            if timed:
                moved[place] = round(max(timed) / min(timed), 3)
        steady = bool(moved) and all(factor <= unsteady_factor for factor in moved.values())
        return cls(seconds, moved, steady)

    @property
    def most_moved(self) -> float | None:
        return max(self.moved.values(), default=None)

    def to_json(self) -> dict[str, Any]:
        return {"seconds": self.seconds, "moved": self.moved, "steady": self.steady}

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> CpuProbe:
        return cls(raw["seconds"], raw["moved"], raw.get("steady"))
