"""A record of make bench (and of its kinds, sweep and overload, and of make map, which it measures): one target
under one closed-loop load (bench/measure/bench_record.py, BenchRecord, writes it)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from bench.results.records import Loaded


@dataclass(frozen=True, kw_only=True)
class BenchResult(Loaded):
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
    command: str | None = None  # the load generator's
    # The server's processes during the load (bench/containers/sampler.py, Usage), or why they were not read.
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
    # What the load generator counted: none where it did not finish (`problem` says why).
    seconds: float | None = None
    complete: int | None = None  # wrk runs for a time: the requests it completed
    efficiency: float | None = None  # rps over ceiling_rps
    p50_ms: float | None = None
    p99_ms: float | None = None
    failed: int | None = None
    non2xx: int | None = None
    survived: bool | None = None  # overload: did the target still answer after its first failing load
    repeat: int | None = None
    rerun_of: int | None = None  # a re-run of an unsteady measurement: that measurement's repeat
    superseded: bool = False  # an unsteady measurement whose re-run counts in its place
    rerun_reference: bool = False  # slow_api alone measured again for the re-runs, not one of its runs
    label: str | None = None  # make map: the target's name on the map
    settings: dict[str, str] | None = None  # the environment its scenario started with (make map, VARIANT=)
    placement: str | None = None  # make recommend: the app on "every core" or on "one core" of its own
    per_core: bool = False  # make recommend: one process per core
    cpusets: dict[str, str] | None = None  # make recommend, on one core: each role's cores (bench/containers/roles.py)
    roles: dict[str, Any] | None = None  # where each role ran (bench/containers/roles.py, describe_roles)
    reference_rps: float | None = None  # slow_api alone under the same load, client and repeat
    vs_reference: float | None = None

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
