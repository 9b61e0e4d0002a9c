"""The CPU probe on the host: how fast this machine runs a fixed piece of Python right now, and make bookstore's
four probes around a measurement as one `cpu_probe`."""

from __future__ import annotations

import math
import time
from typing import Any

from bench.containers.roles import UNSTEADY_FACTOR
from bench.results.records import CpuProbe


def host_cpu_probe() -> float:
    """Seconds a fixed pure-Python loop takes on the host, best of 3: the machine's speed right now (it moves by
    up to 1.8x within minutes on the machines this was made on)."""
    best = math.inf
    for _ in range(3):
        started = time.perf_counter()
        sum(i * i for i in range(2_000_000))
        best = min(best, time.perf_counter() - started)
    return round(best, 3)


# The CPU probe on the host around a target's wrk and around its reference's pgbench, each kept under its own key
# while the round runs: the measurement is steady when the machine's speed kept within UNSTEADY_FACTOR over all
# four, as make bench marks its own.
PROBES = {
    "before": "cpu_probe_s_before",
    "after_wrk": "cpu_probe_s_after_wrk",
    "pgbench_before": "pgbench_cpu_probe_s_before",
    "after": "cpu_probe_s_after",
}


def with_cpu_probe(record: dict[str, Any], judged: bool) -> dict[str, Any]:
    """The record with its host probes as one `cpu_probe` (bench/results/records.py), judged once the database
    alone has run too; a measurement that stopped before that keeps its times unjudged."""
    seconds = {moment: record.pop(key) for moment, key in PROBES.items() if key in record}
    if seconds:
        host = {"host": seconds}
        probe = CpuProbe.judged(host, UNSTEADY_FACTOR) if judged else CpuProbe(host, {}, None)
        record["cpu_probe"] = probe.to_json()
    return record
