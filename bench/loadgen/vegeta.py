"""Running vegeta (v12.13.0): open loop at a fixed rate (make latency), and reading its results request by request;
closed loop from a file of targets (make yourapp's mix, read in bench/modes/yourapp/load.py).

Why vegeta: ab, hey and wrk are closed loops: a client sends its next request only when the last one is answered,
so a server that slows down is sent less, and the requests it would have delayed are never sent nor timed
(coordinated omission; hey's -q rate limit too). vegeta sends on a schedule whatever the server does; it is
one Go binary built from source in about 30 s (.ci/vegeta), where oha, the other open-loop tool with a
correction, takes about 4 min to build.

What it measures (read in its lib/attack.go and lib/pacer.go). Its pacer hands request k to a worker at
k / rate after the start; with -max-workers unbounded (its default), when every worker is waiting for an
answer it starts one more instead of waiting, so the schedule holds however slow the server. Each result
carries a timestamp, taken when its worker begins the request, and a latency, from that timestamp until the
whole body is read: connecting (it keeps connections alive and opens more as needed), sending, the server's
time and queue, reading. So its latency starts at the actual send, not at the intended one: the two differ
only when vegeta itself falls behind (a busy machine; its pacer then sends the late requests at once). Here
each latency is measured from the intended send time instead, the first request's timestamp plus seq / rate,
which adds any such lag, and the largest lag is kept to show whether vegeta kept its schedule.

Why its results one by one (`vegeta encode`, JSON lines) and not its `report -type=json`: that report has no
99.9th percentile, it times from the actual send, its "throughput" divides the successes by the attack plus
the wait for the last answer (a whole delay: 10 / 11 of the rate for a perfect server at a 1 s delay and a
10 s attack), and it counts a 3xx, or a 200 with a wrong body, as a success.
"""

from __future__ import annotations

import base64
import json
import math
import re
import shlex
import subprocess
import tempfile
from collections import Counter
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from bench.loadgen.hey import error_kind
from bench.models.percentiles import rounded_rank

TIMEOUT_SECONDS = 30  # ab's; an answer later than this is a failure ("timeout")
PERCENTILES = {"p50_ms": 0.5, "p90_ms": 0.9, "p99_ms": 0.99, "p999_ms": 0.999}
_STAMP = re.compile(r"^(.+T\d\d:\d\d:\d\d)(?:\.(\d{1,9}))?(Z|[+-]\d\d:\d\d)$")


@dataclass(frozen=True)
class OpenLoopResult:
    offered_rps: float
    requests: int
    sent_rps: float  # requests over the time from the first send to the last
    achieved_rps: float  # successful answers over the time from the first one to the last
    success_ratio: float  # 2xx with the expected body, over every request sent
    status_codes: dict[str, int]  # "0": no HTTP answer
    failure_kinds: dict[str, int]  # connect, timeout, closed, other (no answer); status; body
    # Nearest rank over every request sent, from its intended send time, failures ranked slowest: None where
    # the rank falls on a failure, so that a percentile is never taken from the answers that came back only.
    percentiles_ms: dict[str, float | None]
    max_ms: float | None
    send_lag_ms_max: float  # how much later than its schedule vegeta sent its latest request

    @property
    def keeps_up(self) -> bool:
        """Every request answered well, and as many answers per second as requests offered: within 2 %, where a
        server that keeps up measures within 0.5 % here and one 4 % short already queues a second more."""
        return self.success_ratio == 1 and self.achieved_rps >= 0.98 * self.offered_rps


def attack_command(rate: int, duration: float, output: Path) -> list[str]:
    """Open loop: `rate` requests per second for `duration`, whatever the server does."""
    # -max-workers stays at its default, unbounded: a bounded pool would wait for the server, a closed loop.
    return [
        "vegeta", "attack", "-rate", f"{rate}/s", "-duration", f"{duration:g}s",
        "-timeout", f"{TIMEOUT_SECONDS}s", "-output", str(output),
    ]  # fmt: skip


def closed_loop_command(targets: Path, clients: int, seconds: float, output: Path) -> list[str]:
    """Closed loop from a JSON targets file (make yourapp's mix): `clients` workers for `seconds`."""
    # -rate 0 with -max-workers: each worker sends its next request when its last is answered, a closed loop of
    # `clients` clients, as ab's -c; -format json: the file's methods, headers and bodies; -redirects -1: a redirect
    # is an answer of its own (vegeta follows ten by default), as the development server's was when verified.
    return ["vegeta", "attack", "-format", "json", "-targets", str(targets), "-rate", "0",
            "-max-workers", str(clients), "-workers", str(clients), "-redirects", "-1", "-duration", f"{seconds:g}s",
            "-timeout", f"{TIMEOUT_SECONDS}s", "-output", str(output)]  # fmt: skip


RESULTS_INSIDE = Path("/tmp/results.bin")  # where an attack in vegeta's container writes, then encodes from


def attack_inside(
    prefix: list[str], feed: str, attack: list[str], stdin: str | None, timeout: float
) -> tuple[list[str], str, str]:
    """An attack in vegeta's container, its results encoded there in one go (`vegeta encode`, JSON lines): `prefix`
    runs the shell script given last, `feed` sends the targets into the attack. The command, its output (the
    results) and what it printed on stderr."""
    command = [*prefix, f"{feed} {' '.join(attack)} && vegeta encode -to json {RESULTS_INSIDE}"]
    attacked = attacked_by(command, stdin, timeout)
    return command, attacked.stdout, attacked.stderr


def attacked_by(command: list[str], stdin: str | None, timeout: float) -> subprocess.CompletedProcess[str]:
    """The attack run; ValueError with the end of what it printed where it failed."""
    attacked = subprocess.run(command, input=stdin, capture_output=True, text=True, timeout=timeout)
    if attacked.returncode != 0:
        raise ValueError(f"vegeta attack failed: {attacked.stderr.strip()[-300:]}")
    return attacked


def attack(url: str, rate: int, duration: float, container: list[str] | None = None) -> tuple[list[str], str]:
    """GET url at `rate` requests per second for `duration` seconds: the command, and each result as a JSON line.
    With `container` (`docker run ... flask-playground/vegeta`), vegeta runs in it, attack and encode in one go."""
    if container:
        inside = attack_command(rate, duration, RESULTS_INSIDE)
        feed = f"echo {shlex.quote(f'GET {url}')} |"
        command, results, _ = attack_inside(
            [*container, "sh", "-c"], feed, inside, None, duration + TIMEOUT_SECONDS + 90
        )
        return command, results
    with tempfile.TemporaryDirectory(prefix="vegeta-") as folder:
        output = Path(folder) / "results.bin"
        command = attack_command(rate, duration, output)
        limit = duration + TIMEOUT_SECONDS + 30
        attacked_by(command, f"GET {url}\n", limit)
        encode = ["vegeta", "encode", "-to", "json", str(output)]
        encoded = subprocess.run(encode, capture_output=True, text=True, timeout=60, check=True)
    return command, encoded.stdout


def _nanoseconds(stamp: str) -> int:
    """Go's RFC 3339 with nanoseconds (trailing zeros dropped) as integer nanoseconds: a float would round them."""
    found = _STAMP.match(stamp)
    if not found:
        raise ValueError(f"not a vegeta timestamp: {stamp!r}")
    seconds = int(datetime.fromisoformat(found[1] + found[3]).timestamp())
    return seconds * 1_000_000_000 + int((found[2] or "").ljust(9, "0"))


def _rate(count: int, first_ns: int, last_ns: int) -> float:
    return (count - 1) / ((last_ns - first_ns) / 1e9) if count > 1 and last_ns > first_ns else 0.0


def parse_results(text: str, rate: float, expected_body: str | None = None) -> OpenLoopResult:
    """The figures of one attack at `rate` from `vegeta encode -to json`; ValueError when there is no result."""
    results = sorted((json.loads(line) for line in text.splitlines() if line.strip()), key=lambda r: r["seq"])
    if not results:
        raise ValueError("vegeta sent no request")
    first = _nanoseconds(results[0]["timestamp"])
    interval = 1e9 / rate
    statuses: Counter[str] = Counter()
    kinds: Counter[str] = Counter()
    latencies, answered_at, lags, sent_at = [], [], [], []
    for result in results:
        sent = _nanoseconds(result["timestamp"])
        lag = max(0.0, sent - (first + result["seq"] * interval))
        code = result["code"]
        statuses[str(code)] += 1
        body = base64.b64decode(result["body"] or "").decode(errors="replace")
        if code == 0:
            kinds[error_kind(result["error"])] += 1
        elif not 200 <= code < 300:
            kinds["status"] += 1
        elif expected_body is not None and body != expected_body:
            kinds["body"] += 1
        else:
            latencies.append((result["latency"] + lag) / 1e6)
            answered_at.append(sent + result["latency"])
        lags.append(lag)
        sent_at.append(sent)
    failures = len(results) - len(latencies)
    ordered = sorted(latencies) + [math.inf] * failures
    return OpenLoopResult(
        offered_rps=rate,
        requests=len(results),
        sent_rps=round(_rate(len(sent_at), min(sent_at), max(sent_at)), 2),
        achieved_rps=round(_rate(len(answered_at), min(answered_at, default=0), max(answered_at, default=0)), 2),
        success_ratio=round(len(latencies) / len(results), 4),
        status_codes=dict(sorted(statuses.items())),
        failure_kinds=dict(sorted(kinds.items())),
        percentiles_ms={name: rounded_rank(ordered, share) for name, share in PERCENTILES.items()},
        max_ms=rounded_rank(ordered, 1.0),
        send_lag_ms_max=round(max(lags) / 1e6, 1),
    )
