"""The records of make labs: one target of one failure lab, broken or fixed (bench/modes/labs/run.py builds them).

Each lab measures figures of its own, so each kind of lab has a record type of its own (SHAPES): requests at once
(late-patch and blocking-call), a pool's rounds (pool-default), connections at once (small-backlog) and a heavy
request beside cheap ones (cpu-starvation). A record is written lab, target, variant and setting first, then the
lab's parameters, its commands and its figures, in the order its type declares them."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any, ClassVar, Self

from bench.results.records import Record, known_and_extra


@dataclass(frozen=True, kw_only=True)
class LabResult(Record):
    lab: str
    variant: str  # how this target stands to the lab's failure: broken, fixed, unaffected, ...
    setting: str  # what differs in it, in a few words
    commands: list[list[str]] = field(default_factory=list)  # the load's, as run

    PARAMETERS: ClassVar[tuple[str, ...]] = ()  # the lab's load, written before its commands

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> Self:
        """The record as its lab's type (a lab no type knows: a LabResult, its figures in `extra`)."""
        kind = SHAPES.get(raw.get("lab", ""), cls) if cls is LabResult else cls
        known, extra = known_and_extra(kind, raw)
        return kind(**kind.typed(known), extra=extra)  # type: ignore[return-value]

    def to_json(self) -> dict[str, Any]:
        head = {"lab": self.lab} | self.target_json() | {"variant": self.variant, "setting": self.setting}
        said = {*(member.name for member in fields(LabResult)), *self.PARAMETERS}
        figures = [member.name for member in fields(self) if member.name not in said]
        parameters = {name: getattr(self, name) for name in self.PARAMETERS}
        return (
            head
            | parameters
            | {"commands": self.commands}
            | {name: getattr(self, name) for name in figures}
            | self.extra
        )

    def figure(self, key: str) -> object:
        """One of the lab's own figures, None where this record has none."""
        return getattr(self, key) if key in {member.name for member in fields(self)} else self.extra.get(key)


@dataclass(frozen=True, kw_only=True)
class Answered:
    """What every lab that sends a burst of one kind reports about its requests (run.py, summarise)."""

    requests: int
    answered: int  # with a 200 and slow_api's answer
    failures: dict[str, int]  # by kind: refused, reset, timed out, or a status other than 200
    elapsed_s: float  # from the first request sent to the last answer
    p50_s: float
    max_s: float
    connect_max_s: float | None  # None where no request connected
    connects_over_1s: int  # a connect of a second or more: its first SYN went unanswered and was sent again
    late_over_1s: int  # requests that waited a second or more beyond their own delay


@dataclass(frozen=True, kw_only=True)
class AtOnceResult(LabResult, Answered):
    """late-patch and blocking-call: n requests at once."""

    PARAMETERS: ClassVar[tuple[str, ...]] = ("n", "delay")
    n: int
    delay: float
    serial_ratio: float  # elapsed over n delays: 1 one at a time, 1 / n side by side
    delays: float  # elapsed in delays
    monkeypatch_warnings: int


@dataclass(frozen=True, kw_only=True)
class PoolDefaultResult(LabResult):
    """pool-default: n requests at once, in rounds, each round's figures in `per_round`."""

    PARAMETERS: ClassVar[tuple[str, ...]] = ("n", "delay")
    n: int
    delay: float
    per_round: list[dict[str, Any]]
    answered: int
    requests: int
    elapsed_s: list[float]
    slow_requests: list[int]  # took 1.5 delays or more: waited for another request's connection
    connections_opened: list[int]
    pool_full_warnings: int


@dataclass(frozen=True, kw_only=True)
class SmallBacklogResult(LabResult, Answered):
    """small-backlog: n connections at once, and the kernel's counts of those a full listen queue turned away."""

    PARAMETERS: ClassVar[tuple[str, ...]] = ("n", "delay", "timeout")
    n: int
    delay: float
    timeout: float
    ListenOverflows: int  # noqa: N815  # the kernel's names
    ListenDrops: int  # noqa: N815


@dataclass(frozen=True, kw_only=True)
class CpuStarvationResult(LabResult):
    """cpu-starvation: one heavy request, and cheap ones sent while it runs."""

    PARAMETERS: ClassVar[tuple[str, ...]] = ("units", "cheap", "delay", "every")
    units: int
    cheap: int
    delay: float
    every: float
    requests: int
    answered: int
    cpu_ms_per_unit: float | None
    heavy_s: float
    cheap_s: list[float]
    cheap_p50_s: float
    cheap_max_s: float
    cheap_held_up: int  # held up by more than 0.3 s


SHAPES: dict[str, type[LabResult]] = {
    "late-patch": AtOnceResult,
    "blocking-call": AtOnceResult,
    "pool-default": PoolDefaultResult,
    "small-backlog": SmallBacklogResult,
    "cpu-starvation": CpuStarvationResult,
}
