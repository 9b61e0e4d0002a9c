"""Running h2load (Debian's nghttp2-client, 1.52) and reading its report, with the best a perfect server could score
under it: the HTTP/2 load beside the HTTP/1.1 tools (`make bench LOADGEN=h2load`).

On an http:// URL h2load speaks HTTP/2 in cleartext with prior knowledge (h2c: the connection opens with HTTP/2's
preface); its report names the protocol it got ("Application protocol: h2c"). It opens its c connections at once and
shares the n requests among them (n / c each, the remainder one more for the first), and each sends its requests one
after another (`-m 1`, one stream at a time, its default): a closed loop like hey's, over HTTP/2. So the n requests go
in rounds of c' = min(c, what the server holds at once), and take at least delay x ceil(n / c'); h2load's clock runs
from its start to the last answer:

    n / (delay x ceil(n / c'))

What its report says, and does not:
- Its summary has no percentiles (min, max, mean and deviation only): `--log-file` writes a line per answered request
  (its start in microseconds, its status, its duration in microseconds), and the percentiles come from those.
- "errored" counts requests that got no answer (a refused or reset connection, a protocol error, or "timeout": `-N`,
  a connection silent that long, and the requests it had yet to send). Its "failed" adds every answer that is not
  a 2xx or a 3xx; here those are non-2xx answers, as for the other tools, and not failures.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from bench.models.percentiles import Percentiles, nearest_rank

PERCENTILES = (50, 90, 99)


@dataclass(frozen=True)
class H2loadResult(Percentiles):
    protocol: str  # what h2load negotiated: h2c over http://, h2 over https://
    complete: int  # requests that ended: answered (a line in its log), whatever the status, or failed
    failed: int  # no answer: h2load's "errored"
    failure_kinds: dict[str, int]
    non2xx: int
    seconds: float
    rps: float
    percentiles_ms: dict[int, float]


def h2load_command(url: str, requests: int, concurrency: int, delay: float = 0) -> list[str]:
    # -N 30: a connection silent for 30 s fails, as ab's timeout; --log-file: each request's time, for percentiles.
    return ["h2load", "-n", str(requests), "-c", str(concurrency), "-N", "30", "--log-file=/dev/stdout", url]


_UNITS = {"us": 1e-6, "ms": 1e-3, "s": 1.0}


def parse_h2load(text: str) -> H2loadResult:
    """The figures of h2load's report; ValueError when it has none, or not one request was answered."""
    finished = re.search(r"^finished in ([\d.]+)(us|ms|s), ([\d.]+) req/s", text, re.MULTILINE)
    counts = re.search(r"^requests: (\d+) total, (\d+) started, (\d+) done, (\d+) succeeded, (\d+) failed, "
                       r"(\d+) errored, (\d+) timeout", text, re.MULTILINE)  # fmt: skip
    statuses = re.search(r"^status codes: (\d+) 2xx, (\d+) 3xx, (\d+) 4xx, (\d+) 5xx", text, re.MULTILINE)
    if not finished or not counts or not statuses:
        raise ValueError(f"no report in h2load's output: {text.strip().splitlines()[-1:] or 'nothing'}")
    # h2load's "failed" also counts every answer that is not a 2xx or 3xx: no answer at all is "errored".
    done, failed, timeout = int(counts[3]), int(counts[6]), int(counts[7])
    logged = re.findall(r"^(\d+)\t(\d+)\t(\d+)$", text, re.MULTILINE)
    durations = sorted(int(duration) / 1000 for _, status, duration in logged if int(status) > 0)
    if not durations:
        raise ValueError(f"not one answer in {done} requests ({failed} failed, {timeout} timed out)")
    protocol = re.search(r"^Application protocol: (\S+)", text, re.MULTILINE)
    kinds = {"timeout": timeout, "other": failed - timeout}
    return H2loadResult(
        protocol=protocol[1] if protocol else "none",
        complete=len(durations) + failed,
        failed=failed,
        failure_kinds={kind: count for kind, count in kinds.items() if count},
        non2xx=sum(map(int, statuses.groups()[1:])),
        seconds=float(finished[1]) * _UNITS[finished[2]],
        rps=float(finished[3]),
        percentiles_ms={p: round(nearest_rank(durations, p / 100), 1) for p in PERCENTILES},
    )


def ceiling_rps(requests: int, concurrency: int, delay: float, server_concurrency: int | None) -> float:
    if delay <= 0:
        return math.inf
    served = concurrency if server_concurrency is None else min(concurrency, server_concurrency)
    return requests / (delay * math.ceil(requests / served))
