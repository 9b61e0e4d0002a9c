"""make bench's record (make sweep's, overload's and map's too): one target under one closed-loop load, the best a
perfect server could score under it, whether the target answered right, and what was measured (Measurement); then,
once a run's records are in, each one's throughput as a share of slow_api alone under the same load."""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass, field
from typing import Any

from bench.containers.scenarios import REFERENCE, Target
from bench.measure.client import Client, Load
from bench.models.ceiling import cpu_bound_rps, naive_ceiling_rps
from bench.results.records import CpuProbe


@dataclass
class Measurement:
    """What the load generator counted, and what the server's processes used meanwhile (bench/containers/sampler.py)."""

    command: str
    usage: dict[str, Any]  # the sampler's Usage as JSON, or why there is none ({"not_sampled": ...})
    rps: float | None = None  # None: the load generator did not finish, `problem` says why
    seconds: float | None = None
    complete: int | None = None  # wrk runs for a time: its count is the server's, not the one asked for
    efficiency: float | None = None
    p50_ms: float | None = None
    p99_ms: float | None = None
    failed: int | None = None
    non2xx: int | None = None
    problem: str | None = None

    def to_json(self) -> dict[str, Any]:
        figures = {key: value for key, value in asdict(self).items() if key not in ("command", "usage", "problem")}
        finished = {} if self.rps is None else figures
        return {"command": self.command, **self.usage, **finished, "problem": self.problem}


@dataclass
class BenchRecord:
    """One target under one load: what was loaded and how, the best a perfect server could score, whether the
    target answered right, and what was measured. `to_json` is the record as results.json keeps it."""

    target: Target
    load: Load
    client: Client
    cpu_ms_per_unit: float | None
    ceiling_rps: float
    ceiling_naive_rps: float
    app_settings: dict[str, str] | None = None  # None: the scenario did not start
    server_command: list[str] | None = None
    threads_idle: int | None = None
    verified: bool = False
    problem: str | None = None
    measurement: Measurement | None = None
    cpu_probe: CpuProbe | None = None  # the CPU's speed around the measurement (bench/containers/roles.py)
    survived: bool | None = None  # overload: did the target still answer after its first failing load
    repeat: int | None = None
    # A re-run (--rerun-unsteady): the repeat whose unsteady record this one stands in for; that record keeps
    # `superseded` and stays in results.json, out of the tables.
    rerun_of: int | None = None
    superseded: bool = False
    # What a mode adds to its records (the map: its label and settings; the harness: where each role ran).
    extra: dict[str, Any] = field(default_factory=dict)
    vs_reference: float | None = None
    reference_rps: float | None = None

    @property
    def ok(self) -> bool:
        return self.verified and not self.problem

    @property
    def unsteady(self) -> bool:
        return self.cpu_probe is not None and self.cpu_probe.steady is False

    @property
    def rps(self) -> float | None:
        return self.measurement.rps if self.measurement else None

    def to_json(self) -> dict[str, Any]:
        record = {
            **self.target.record_fields(),
            "n": self.load.n,
            "c": self.load.c,
            "delay": self.load.delay,
            "cpu_units": self.load.cpu,
            "cpu_ms_per_unit": self.cpu_ms_per_unit,
            "client": self.client.place,
            "loadgen": self.client.loadgen.name,
            "keepalive": self.client.loadgen.keepalive,
            "ceiling_rps": self.ceiling_rps,
            "ceiling_naive_rps": self.ceiling_naive_rps,
        }
        if self.app_settings is not None:
            record["app_settings"] = self.app_settings
        if self.server_command is not None:
            record["server_command"] = self.server_command
        if self.threads_idle is not None:
            record["threads_idle"] = self.threads_idle
        record |= {"verified": self.verified, "problem": self.problem}
        if self.measurement:
            record |= self.measurement.to_json()
        if self.cpu_probe is not None:
            record["cpu_probe"] = self.cpu_probe.to_json()
        record["problem"] = self.problem
        if self.survived is not None:
            record["survived"] = self.survived
        if self.repeat is not None:
            record["repeat"] = self.repeat
        if self.rerun_of is not None:
            record["rerun_of"] = self.rerun_of
        if self.superseded:
            record["superseded"] = True
        record["ok"] = self.ok
        record |= self.extra
        if self.vs_reference is not None:
            record |= {"reference_rps": self.reference_rps, "vs_reference": self.vs_reference}
        return record


def unmeasured_record(target: Target, load: Load, client: Client, cpu_ms_per_unit: float | None = None) -> BenchRecord:
    """The record before any measurement, its fixed part: what was loaded, how, and the best a perfect server could
    score.

    With CPU work, a request holds its place for the delay plus its CPU time, and the CPU time alone bounds
    the throughput (bench/models/ceiling.py, cpu_bound_rps). The CPU time is the units times what one unit took in
    the target's own image just before (cpu_ms_per_unit): the server's and Flask's own CPU per request is not
    in it, so with CPU work the ceiling is an upper bound that no server reaches."""
    cpu_seconds = load.cpu * (cpu_ms_per_unit or 0) / 1000
    ceiling = client.loadgen.ceiling_rps(load.n, load.c, load.delay + cpu_seconds, target.concurrency)
    naive = naive_ceiling_rps(load.c, load.delay + cpu_seconds, target.concurrency)
    if cpu_seconds:
        bound = cpu_bound_rps(cpu_seconds, target.workers, os.cpu_count() or 1)
        ceiling, naive = min(ceiling, bound), min(naive, bound)
    return BenchRecord(target, load, client, cpu_ms_per_unit, round(ceiling, 2), round(naive, 2))


def compare_to_reference(records: list[BenchRecord]) -> None:
    """Each record's throughput as a share of slow_api alone under the same load, client and repeat."""

    # slow_api has no CPU knob: with ?cpu=, the reference is still slow_api alone at the same delay.
    def key(record: BenchRecord) -> tuple[int, int, float, str, int | None]:
        return record.load.n, record.load.c, record.load.delay, record.client.place, record.repeat

    reference = {key(r): r.rps for r in records if r.target.scenario == REFERENCE and r.ok}
    for record in records:
        reference_rps = reference.get(key(record))
        if reference_rps and record.ok and record.rps is not None:
            record.reference_rps = reference_rps
            record.vs_reference = round(record.rps / reference_rps, 3)
