"""The best throughput a perfect server could score under ab, for a given load and delay.

ab sends its first request alone and opens its other c - 1 connections only when that answer's headers
arrive (httpd's support/ab.c), so with a slow endpoint every run lasts one extra delay. The rest go in
rounds of c' = min(c, what the server holds at once): n requests take at least
delay x (1 + ceil((n - 1) / c')).
"""

from __future__ import annotations

import math


def _clients_served(concurrency: int, server_concurrency: int | None) -> int:
    return concurrency if server_concurrency is None else min(concurrency, server_concurrency)


def ceiling_rps(requests: int, concurrency: int, delay: float, server_concurrency: int | None) -> float:
    if delay <= 0:
        return math.inf  # no wait to hide: only CPU bounds the server, and this model says nothing
    rounds = 1 + math.ceil((requests - 1) / _clients_served(concurrency, server_concurrency))
    return requests / (delay * rounds)


def naive_ceiling_rps(concurrency: int, delay: float, server_concurrency: int | None) -> float:
    """c' / delay: what a client opening every connection at once would allow."""
    return math.inf if delay <= 0 else _clients_served(concurrency, server_concurrency) / delay


def cpu_bound_rps(cpu_seconds: float, processes: int, cores: int) -> float:
    """What `?cpu=` work alone allows: a process runs Python on one core at a time (the GIL; a gevent or asyncio
    worker has one thread anyway), and there are `cores`: min(processes, cores) / CPU seconds per request."""
    return min(processes, cores) / cpu_seconds if cpu_seconds > 0 else math.inf


def efficiency(rps: float, ceiling: float) -> float:
    return rps / ceiling if math.isfinite(ceiling) and ceiling > 0 else 0.0
