"""What the records of every mode share, typed: the target a record is about (Record), whether the target was
verified and the measurement went well (Checked, every mode's but the labs'), the CPU probe around a measurement
(CpuProbe) and the set's metadata (Metadata). A field is named as results.json names its key; a key a record's
class does not name stays in its `extra`, as the file had it, so that nothing read is lost."""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from typing import TYPE_CHECKING, Any, Self, TypeVar

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

Taking = TypeVar("Taking", bound="DataclassInstance")


def known_and_extra(kind: type[Any], raw: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The keys a dataclass names, and the others."""
    names = {member.name for member in fields(kind)} - {"extra"}
    known = {key: value for key, value in raw.items() if key in names}
    return known, {key: value for key, value in raw.items() if key not in names}


def taken_in(whole: Taking, *steps: DataclassInstance) -> Taking:
    """`whole` with each step's fields, named as its own (a name it lacks fails here)."""
    return replace(whole, **{member.name: getattr(step, member.name) for step in steps for member in fields(step)})


@dataclass(frozen=True, kw_only=True)
class Record:
    """What every record of every mode says about its target (bench/containers/scenarios.py, Target.record_fields)."""

    scenario: str
    target: str
    server: str
    mode: str  # how the server holds requests at once: sync, gevent or asyncio (the set's mode is Metadata's)
    workers: int
    threads_per_worker: int | None = None
    gevent_cores: int | None = None
    concurrency: int | None = None  # requests held at once; None: only memory limits it
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> Self:
        known, extra = known_and_extra(cls, raw)
        return cls(**cls.typed(known), extra=extra)

    @classmethod
    def typed(cls, known: dict[str, Any]) -> dict[str, Any]:
        """The values of the keys that hold an object of their own, typed; a class with such keys says which."""
        return known

    def target_json(self) -> dict[str, Any]:
        """The keys every record opens with: Record's fields, declared in Target.record_fields' order; a mode's
        to_json starts from them."""
        return {member.name: getattr(self, member.name) for member in fields(Record) if member.name != "extra"}

    def with_measured(self, *steps: DataclassInstance) -> Self:
        """The record with what each step of its measuring found: a frozen dataclass of its own, built typed where it
        was measured, whose fields are named as the record's (a name the record lacks fails here)."""
        return taken_in(self, *steps)

    def present(self, *keys: str) -> dict[str, Any]:
        """The keys named, of those whose value is not None: what a record writes only where it was recorded."""
        return {key: getattr(self, key) for key in keys if getattr(self, key) is not None}

    def per_worker(self) -> int | None:
        """Requests one worker holds at once: its threads, or its greenlets; None for unbounded (asyncio, a thread
        per request)."""
        return self.threads_per_worker if self.mode == "sync" else self.gevent_cores


@dataclass(frozen=True, kw_only=True)
class Checked(Record):
    """A record of a mode that verifies its target before it trusts it: every mode's but the labs', whose broken
    targets are the point."""

    verified: bool
    problem: str | None = None  # why the record is not OK (did not start, not verified, failed requests)
    ok: bool

    def judged(self, *also: bool) -> Self:
        """The record with `ok` said, once its verification and its problem are final: verified, nothing went wrong,
        and whatever else its mode asks (`also`)."""
        return replace(self, ok=self.verified and not self.problem and all(also))


@dataclass(frozen=True, kw_only=True)
class Loaded(Checked):
    """A record of a target under a load (make bench's, make bookstore's): the rate it reached, none where the load
    did not run, and the CPU probe around it."""

    rps: float | None = None
    cpu_probe: CpuProbe | None = None

    @classmethod
    def typed(cls, known: dict[str, Any]) -> dict[str, Any]:
        return known | {"cpu_probe": probe_of(known.get("cpu_probe"))}

    @property
    def measured(self) -> bool:
        return self.rps is not None


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


def probe_of(raw: dict[str, Any] | None) -> CpuProbe | None:
    return None if raw is None else CpuProbe.from_json(raw)


@dataclass(frozen=True, kw_only=True)
class Metadata:
    """What every set records about its run (bench/measure/resultset.py, metadata); what a mode adds about its own
    run (make bench's repeat and roles, make bookstore's scale and database, ...) is in `extra`."""

    mode: str  # the mode that made the set, which names its renderer
    command: str
    date: str
    git_commit: str
    cpu_count: int | None
    kernel: str
    docker_version: str
    compose_version: str
    packages: dict[str, list[str]]  # per image: its interpreter, then its packages
    cpu_model: str | None = None  # sets from before it was recorded have none
    minutes: float | None = None  # how long the run took; none in a run stopped half-way
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> Metadata:
        known, extra = known_and_extra(cls, raw)
        return cls(**known, extra=extra)


@dataclass(frozen=True, kw_only=True)
class WritesChecked:
    """What the lookup of a load's writes found (bench/measure/bookstore.py, check_writes): make bookstore's and make
    incidents' records are made of it (none where the load wrote nothing, or was not looked up)."""

    writes_found: int | None = None
    writes_lost: int | None = None  # acknowledged, and not in the database
    writes_lost_markers: list[str] | None = None  # the first five
    writes_unacknowledged: int | None = None  # in the database, their 201 never read
