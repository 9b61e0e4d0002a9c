"""Running hey (Debian's 0.1.4) and reading its report, with the best a perfect server could score under it.

hey starts its c workers at once, each with its own connection, kept alive, and each sends n / c requests (an
integer division: hey drops the remainder) one after the other, waiting for each answer: a closed loop. So
m = c x floor(n / c) requests go in rounds of c' = min(c, what the server holds at once), and every slot of
the server serves at most one request per delay: m requests take at least delay x ceil(m / c'). hey's clock
runs from its start to the last answer, so the best it can report is

    m / (delay x ceil(m / c'))

which is c' / delay when c' divides m: no solo first request as with ab (bench/models/ceiling.py).

What its report says, and does not:
- "Requests/sec" counts every request that ended, failed ones too, over the whole run.
- Its latency distribution covers answered requests only, failures aside. Its rank rule never reaches the
  99th percentile below 100 answers; the nearest-rank 99th percentile of at most 100 values is the slowest,
  which hey prints as "Slowest", so that is the P99 taken then.
- A non-2xx answer is a status in its "Status code distribution", not an error; errors (refused, reset,
  timed out) are Go's net/http messages in its "Error distribution", one line per distinct message.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from bench.models.percentiles import Percentiles

# Go's net/http error messages (hey's, and vegeta's) by what went wrong; the first that matches names it.
ERROR_KINDS = (
    ("connect", ("connection refused", "dial tcp", "no such host")),
    ("timeout", ("Timeout exceeded", "i/o timeout", "deadline exceeded")),
    ("closed", ("EOF", "connection reset", "broken pipe", "server closed")),
)


def error_kind(message: str) -> str:
    return next((kind for kind, marks in ERROR_KINDS if any(mark in message for mark in marks)), "other")


@dataclass(frozen=True)
class HeyResult(Percentiles):
    complete: int  # requests that ended: answered, whatever the status, or failed
    failed: int  # no HTTP answer: refused, reset, closed or timed out
    failure_kinds: dict[str, int]
    non2xx: int
    seconds: float
    rps: float
    percentiles_ms: dict[int, float]


def hey_command(url: str, requests: int, concurrency: int, delay: float = 0) -> list[str]:
    # ab's timeout is 30 s; hey's default of 20 s would count a long queue as errors that ab waits out.
    return ["hey", "-n", str(requests), "-c", str(concurrency), "-t", "30", url]


def parse_hey(text: str) -> HeyResult:
    """The figures of hey's summary; ValueError when it has none, or not one request was answered."""
    total = re.search(r"^\s+Total:\s+([\d.]+) secs", text, re.MULTILINE)
    rps = re.search(r"^\s+Requests/sec:\s+([\d.]+)", text, re.MULTILINE)
    if not total or not rps:
        raise ValueError(f"no summary in hey's output: {text.strip().splitlines()[-1:] or 'nothing'}")
    statuses = {int(code): int(count) for code, count in re.findall(r"^\s+\[(\d{3})\]\s+(\d+) responses", text, re.M)}
    kinds: dict[str, int] = {}
    errors = text.split("Error distribution:", 1)[1] if "Error distribution:" in text else ""
    for count, message in re.findall(r"^\s+\[(\d+)\]\s+(.+)$", errors, re.MULTILINE):
        kinds[error_kind(message)] = kinds.get(error_kind(message), 0) + int(count)
    failed = sum(kinds.values())
    if not statuses:
        raise ValueError(f"not one answer in {failed} requests ({_kinds(kinds)})")
    # "0% in 0.0000 secs" stands for a percentile hey did not reach: skipped.
    found = re.findall(r"^\s+(\d+)% in ([\d.]+) secs", text, re.MULTILINE)
    percentiles = {int(p): round(float(s) * 1000, 1) for p, s in found if int(p) > 0}
    slowest = re.search(r"^\s+Slowest:\s+([\d.]+) secs", text, re.MULTILINE)
    for rank in (50, 99):
        if rank not in percentiles and slowest:
            percentiles[rank] = round(float(slowest[1]) * 1000, 1)
    answered = sum(statuses.values())
    return HeyResult(
        complete=answered + failed,
        failed=failed,
        failure_kinds=kinds,
        non2xx=sum(count for code, count in statuses.items() if not 200 <= code < 300),
        seconds=float(total[1]),
        rps=float(rps[1]),
        percentiles_ms=dict(sorted(percentiles.items())),
    )


def _kinds(kinds: dict[str, int]) -> str:
    return ", ".join(f"{kind} {count}" for kind, count in kinds.items()) or "no error either"


def sent_requests(requests: int, concurrency: int) -> int:
    return concurrency * (requests // concurrency)


def ceiling_rps(requests: int, concurrency: int, delay: float, server_concurrency: int | None) -> float:
    if delay <= 0:
        return math.inf
    served = concurrency if server_concurrency is None else min(concurrency, server_concurrency)
    sent = sent_requests(requests, concurrency)
    return sent / (delay * math.ceil(sent / served))
