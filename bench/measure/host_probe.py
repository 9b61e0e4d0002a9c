"""The CPU probe on the host: how fast this machine runs a fixed piece of Python right now, and make bookstore's
four probes around a measurement as one `cpu_probe`."""

from __future__ import annotations

import math
import time

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


# The CPU probe on the host around a target's wrk and around its reference's pgbench (make bookstore), by moment, in
# this order: the measurement is steady when the machine's speed kept within UNSTEADY_FACTOR over all four, as make
# bench marks its own.
MOMENTS = ("before", "after_wrk", "pgbench_before", "after")


def cpu_probe_of(seconds: dict[str, float], judged: bool) -> CpuProbe | None:
    """The host's probes (seconds by moment) as one `cpu_probe` (bench/results/records.py), judged once the database
    alone has run too; a measurement that stopped before that keeps its times unjudged; None where none ran."""
    host = {moment: seconds[moment] for moment in MOMENTS if moment in seconds}
    if not host:
        return None
    return CpuProbe.judged({"host": host}, UNSTEADY_FACTOR) if judged else CpuProbe({"host": host}, {}, None)
