"""The CPU probe on the host: how fast this machine runs a fixed piece of Python right now."""

from __future__ import annotations

import math
import time


def host_cpu_probe() -> float:
    """Seconds a fixed pure-Python loop takes on the host, best of 3: the machine's speed right now (it moves by
    up to 1.8x within minutes on the machines this was made on)."""
    best = math.inf
    for _ in range(3):
        started = time.perf_counter()
        sum(i * i for i in range(2_000_000))
        best = min(best, time.perf_counter() - started)
    return round(best, 3)
