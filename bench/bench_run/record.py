"""make bench's record (make sweep's, overload's, map's and recommend's too): one target under one closed-loop load.
It is made of what the mode says of its run (RunFacts) and of what the load measured (Measurement), each declared
once, here; measure.py builds it as it measures, taking each of them in whole, and a mode changes it only for what it
learns after (a re-run, the same-run reference). The result store writes it (to_json) and reads it back (from_json)
as this same class."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from bench.results.records import Loaded

# The server's processes during the load (bench/containers/sampler.py, Usage: its fields, in its order).
USAGE = (
    "threads_peak", "rss_mb_peak", "cpu_seconds", "pg_sessions_peak", "pg_busy_peak", "pg_memory_mb_peak",
    "cpu_seconds_others", "machine_busy",
)  # fmt: skip
# What the load generator counted, where it finished.
FIGURES = ("rps", "seconds", "complete", "efficiency", "p50_ms", "p99_ms", "failed", "non2xx")
# What a mode adds about its run, after `ok`, in the order the modes wrote them.
RUN = ("roles", "label", "settings", "placement", "per_core", "cpusets")


@dataclass(frozen=True, kw_only=True)
class RunFacts:
    """What a mode says of its run, which every record of it carries: the record is made of it (measure.py gives it
    from the record's first step)."""

    repeat: int | None = None
    label: str | None = None  # make map: the target's name on the map
    settings: dict[str, str] | None = None  # the environment its scenario started with (make map, VARIANT=)
    placement: str | None = None  # make recommend: the app on "every core" or on "one core" of its own
    per_core: bool | None = None  # make recommend: one process per core (None: another mode, which does not say)
    cpusets: dict[str, str] | None = None  # make recommend, on one core: each role's cores (bench/containers/roles.py)
    roles: dict[str, Any] | None = None  # where each role ran (bench/containers/roles.py, describe_roles)


@dataclass(frozen=True, kw_only=True)
class Measurement:
    """What the load generator counted, and what the server's processes used meanwhile (bench/containers/sampler.py,
    Usage) or why they were not read; the problem that spoiled them. measure.py measures it; the record is made of
    it and takes it in whole."""

    command: str | None = None  # the load generator's
    # The server's processes during the load (USAGE), none where they were not read (`not_sampled` says why).
    threads_peak: int | None = None
    rss_mb_peak: float | None = None
    cpu_seconds: float | None = None
    pg_sessions_peak: int | None = None
    pg_busy_peak: int | None = None
    pg_memory_mb_peak: float | None = None
    cpu_seconds_others: dict[str, float] | None = None  # the other processes on a request's path, by name
    machine_busy: float | None = None
    sampled_on: str | None = None  # "this machine", or "through the engine: <its command line>"
    not_sampled: str | None = None
    # What the load generator counted (FIGURES): none where it did not finish (`problem` says why).
    rps: float | None = None
    seconds: float | None = None
    complete: int | None = None  # wrk runs for a time: the requests it completed
    efficiency: float | None = None  # rps over ceiling_rps
    p50_ms: float | None = None
    p99_ms: float | None = None
    failed: int | None = None
    non2xx: int | None = None
    problem: str | None = None


@dataclass(frozen=True, kw_only=True)
class BenchResult(Loaded, Measurement, RunFacts):
    # The load and who sent it: in every record, a target that did not start too.
    n: int  # requests asked for (wrk: what its duration was computed from)
    c: int  # clients at once
    delay: float  # seconds each request waits on slow_api
    client: str  # where the load generator ran: host or container
    ceiling_rps: float  # the best a perfect server could score under this load generator
    ceiling_naive_rps: float  # clients / delay, capped by what the target holds at once
    cpu_units: int = 0  # ?cpu= work per request
    cpu_ms_per_unit: float | None = None
    loadgen: str = "ab"
    keepalive: bool | None = None
    # The target as it ran: from a target that started.
    app_settings: dict[str, str] | None = None
    server_command: list[str] | None = None
    threads_idle: int | None = None
    survived: bool | None = None  # overload: did the target still answer after its first failing load
    rerun_of: int | None = None  # a re-run of an unsteady measurement: that measurement's repeat
    superseded: bool = False  # an unsteady measurement whose re-run counts in its place
    rerun_reference: bool = False  # slow_api alone measured again for the re-runs, not one of its runs
    reference_rps: float | None = None  # slow_api alone under the same load, client and repeat
    vs_reference: float | None = None

    @property
    def unsteady(self) -> bool:
        return self.cpu_probe is not None and self.cpu_probe.steady is False

    def to_json(self) -> dict[str, Any]:
        """The record as results.json keeps it, key for key as make bench wrote it before it was typed: a key is
        absent where the step that writes it did not run (the scenario did not start, the target was not verified, the
        load generator did not finish) or the mode does not add it, and null where the step ran without a figure."""
        record = self.target_json() | {
            "n": self.n, "c": self.c, "delay": self.delay, "cpu_units": self.cpu_units,
            "cpu_ms_per_unit": self.cpu_ms_per_unit, "client": self.client, "loadgen": self.loadgen,
            "keepalive": self.keepalive, "ceiling_rps": self.ceiling_rps, "ceiling_naive_rps": self.ceiling_naive_rps,
        }  # fmt: skip
        record |= self.present("app_settings", "server_command", "threads_idle")
        record |= {"verified": self.verified, "problem": self.problem}
        if self.command is not None:  # the load ran
            record["command"] = self.command
            sampled = USAGE if self.not_sampled is None else ("not_sampled",)
            record |= {key: getattr(self, key) for key in (*sampled, "sampled_on")}
            record |= {} if self.rps is None else {key: getattr(self, key) for key in FIGURES}
        if self.cpu_probe is not None:
            record["cpu_probe"] = self.cpu_probe.to_json()
        record |= self.present("survived", "repeat", "rerun_of")
        record |= {"superseded": True} if self.superseded else {}
        record |= {"ok": self.ok} | self.present(*RUN)
        record |= {"rerun_reference": True} if self.rerun_reference else {}
        if self.vs_reference is not None:
            record |= {"reference_rps": self.reference_rps, "vs_reference": self.vs_reference}
        return record | self.extra

    @property
    def throughput(self) -> float:
        """rps, of a record that has one: every OK record has."""
        if self.rps is None:
            raise ValueError(f"{self.scenario} / {self.target}, {self.c} clients: no throughput measured")
        return self.rps

    @property
    def requests_completed(self) -> int:
        # wrk runs for a time: per request means per request it completed.
        return self.complete or self.n
