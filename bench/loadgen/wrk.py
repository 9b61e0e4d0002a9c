"""Running wrk (Debian's 4.1.0) and reading its report, with the best a server could score under it.

wrk runs for a duration, not a number of requests: its c connections (t threads, each c / t of them) are all
opened at the start and kept alive, each sending its next request as soon as the previous answer is in.
`-d` takes whole seconds only, so n requests from c clients become D = ceil(delay x ceil(n / c)) seconds,
the time the same rounds take at the delay (at least 1 s).

The best it can report. With a server holding c' = min(c, what it holds at once) requests, each slot ends
at most one request per delay, one round after the other from the start. wrk counts the answers that arrive
before it stops and divides by its run time, so only the rounds that end before D count, and the one in
progress at D is lost:

    c' x (ceil(D / delay) - 1) / D

When the delay divides D (the tutorial's 1 s delay always does), the last round of a server at the delay
ends right at D, but a real request takes a few milliseconds more than the delay: after D. wrk sets its stop
flag at D and each thread sees it at its next 100 ms tick; measured here the run lasted D + 30 to 40 ms, and
of 200 connections to slow_api alone (through docker-proxy), 4 had their 10th answer in by then. So the last
round is counted as lost: c' / delay x 9 / 10 at D = 10 s. A server within a few milliseconds of the delay
can score a little above this ceiling (at most one round: 10 / 9 of it); efficiencies under wrk move by
whole rounds, where hey's and ab's do not.

What its report says, and does not:
- `--latency` prints the 50th, 75th, 90th and 99th percentiles. wrk corrects them for coordinated omission its
  own way: from each answer that took at least twice the mean time between two requests of a connection, it
  adds made-up samples one such interval apart, below it (stats_correct in wrk.c).
- `--timeout` is only a recording limit: an answer later than it counts as a "timeout" error and among the
  requests, but not in the latencies; a request never answered is never counted at all. Its default, 2 s,
  would drop every queued request of a 1 s delay from the percentiles: 30 s here, as ab's.
- "Non-2xx or 3xx responses" counts statuses above 399. Socket errors: connect (a failed connect), read (a
  reset or a broken answer), write (a failed send, e.g. to a closed server: thousands of them, as wrk retries
  at once), timeout (above).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path

from bench.models.percentiles import Percentiles

UNITS = {"us": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
_TIME = r"([\d.]+)(us|ms|s|m|h)"


@dataclass(frozen=True)
class WrkResult(Percentiles):
    complete: int  # answers, whatever their status; late ones ("timeout") too
    failed: int  # socket errors and late answers
    failed_connect: int
    failed_read: int
    failed_write: int
    failed_timeout: int
    non2xx: int  # statuses above 399: wrk counts a 3xx as a success
    seconds: float
    rps: float
    percentiles_ms: dict[int, float]

    @property
    def failure_kinds(self) -> dict[str, int]:
        return {
            "connect": self.failed_connect,
            "read": self.failed_read,
            "write": self.failed_write,
            "timeout": self.failed_timeout,
        }


def duration_seconds(requests: int, concurrency: int, delay: float) -> int:
    return max(1, math.ceil(delay * math.ceil(requests / concurrency)))


def threads(concurrency: int) -> int:
    # Each thread gets c / t connections, an integer division: two threads (one per core here) when c is even.
    return 2 if concurrency % 2 == 0 else 1


def wrk_command(url: str, requests: int, concurrency: int, delay: float) -> list[str]:
    duration = duration_seconds(requests, concurrency, delay)
    return [
        "wrk", "--threads", str(threads(concurrency)), "--connections", str(concurrency),
        "--duration", f"{duration}s", "--timeout", "30s", "--latency", url,
    ]  # fmt: skip


def _seconds(amount: str, unit: str) -> float:
    return float(amount) * UNITS[unit]


def parse_wrk(text: str) -> WrkResult:
    """The figures of wrk's report; ValueError when it has none, or not one request was answered in time."""
    done = re.search(rf"^\s+(\d+) requests in {_TIME}", text, re.MULTILINE)
    rps = re.search(r"^Requests/sec:\s+([\d.]+)", text, re.MULTILINE)
    if not done or not rps:
        raise ValueError(f"no report in wrk's output: {text.strip().splitlines()[-1:] or 'nothing'}")
    errors = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", text)
    connect, read, write, timeout = map(int, errors.groups()) if errors else (0, 0, 0, 0)
    non2xx = re.search(r"^\s+Non-2xx or 3xx responses: (\d+)", text, re.MULTILINE)
    complete = int(done[1])
    if complete == timeout:
        kinds = f"connect {connect}, read {read}, write {write}, timeout {timeout}"
        raise ValueError(f"not one answer within the timeout in {complete} answers ({kinds})")
    latencies = text.split("Latency Distribution", 1)[1] if "Latency Distribution" in text else ""
    found = re.findall(rf"^\s+(\d+)%\s+{_TIME}", latencies, re.MULTILINE)
    percentiles = {int(p): round(_seconds(amount, unit) * 1000, 1) for p, amount, unit in found}
    if 99 not in percentiles:
        raise ValueError("no latency percentiles in wrk's output: is --latency missing?")
    return WrkResult(
        complete=complete,
        failed=connect + read + write + timeout,
        failed_connect=connect,
        failed_read=read,
        failed_write=write,
        failed_timeout=timeout,
        non2xx=int(non2xx[1]) if non2xx else 0,
        seconds=_seconds(done[2], done[3]),
        rps=float(rps[1]),
        percentiles_ms=percentiles,
    )


def ceiling_rps(requests: int, concurrency: int, delay: float, server_concurrency: int | None) -> float:
    if delay <= 0:
        return math.inf
    served = concurrency if server_concurrency is None else min(concurrency, server_concurrency)
    duration = duration_seconds(requests, concurrency, delay)
    # The rounds that end before D; the epsilon keeps e.g. 3 / 0.3 = 10.000...02 from counting an 11th.
    return served * (math.ceil(duration / delay - 1e-9) - 1) / duration


def script_command(
    url: str, network: str, clients: int, seconds: int, script: Path, arguments: list[str], image: str
) -> list[str]:
    """wrk with a Lua script, from its image on a scenario's network: no docker-proxy between it and the server.
    The script's own arguments follow `--`."""
    inside = [
        "wrk", "--threads", "2", "--connections", str(clients), "--duration", f"{seconds}s",
        "--timeout", "30s", "--latency", "--script", f"/{script.name}", url, "--", *arguments,
    ]  # fmt: skip
    mount = ["--volume", f"{script}:/{script.name}:ro"]
    return ["docker", "run", "--rm", "--network", network, *mount, image, *inside]
