"""The measuring of `make yourapp`: the requests file's mix at a number of clients (vegeta in a closed loop, from
its JSON targets), read per request of the file, an answer counting only with that request's expected status; its
writes looked up afterwards (session.py); and what each request type costs alone (CPU, wall time, the rest spent
waiting, and where its CPU goes, by py-spy)."""

from __future__ import annotations

import json
import secrets
import subprocess
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from bench.containers.cgroup import container_cpu_seconds
from bench.containers.sampler import Sampler
from bench.loadgen import vegeta
from bench.loadgen.hey import error_kind
from bench.loadgen.vegeta_targets import RequestSpec, labels, request_of, vegeta_json_targets
from bench.measure import profile
from bench.measure.client import build_loadgen_image
from bench.models.percentiles import rounded_rank
from bench.modes.yourapp.checks import ask
from bench.modes.yourapp.database import Database, database_work, per_request
from bench.modes.yourapp.session import Session, acknowledged, look_up, send_samples
from bench.modes.yourapp.ways import RunningWay


@dataclass(frozen=True)
class MixResult:
    """One closed-loop load of the mix: vegeta with `clients` workers, each sending its next request when the last
    is answered, for `seconds`."""

    clients: int
    requests: int
    rps: float  # answers with their request's expected status per second of the load
    errors: int  # requests without their expected status, or without an answer
    status_codes: dict[str, int]
    failure_kinds: dict[str, int]  # connect, timeout, closed, other (no answer); status (not the expected one)
    p50_ms: float | None
    p99_ms: float | None  # over every request, a failed one ranked slowest; None where the rank falls on one
    # Per request of the file, by its label (bench/loadgen/vegeta_targets.labels): line, expect, requests, answered
    # (with the expected status), errors, statuses (every status it got, "0": no answer), p50_ms, p99_ms.
    per_type: dict[str, dict[str, Any]]
    cpu_ms_per_request: float | None  # the app's processes' CPU over the requests answered
    rss_mb_peak: float | None  # the app's processes together
    processes: int | None
    loadgen_cpu_seconds: float | None  # vegeta's own: the measurement's own cost
    command: list[str]
    # Per write of the file, by its label: its lookup page, acknowledged, found, lost (acknowledged, not found),
    # found_unacknowledged; or the problem that kept it from being looked up.
    writes: dict[str, dict[str, Any]] = field(default_factory=dict)
    # The reader's Postgres (a SERVICES= file's), over the same requests: its container's CPU, its statements.
    db_cpu_ms_per_request: float | None = None
    db_statements_per_request: float | None = None


# Runs the script given last in the load's container and prints, last, the CPU seconds it spent: the measurement's
# own cost.
_TIMED = (
    "import resource, subprocess, sys; done = subprocess.run(['sh', '-c', sys.argv[1]]); "
    "used = resource.getrusage(resource.RUSAGE_CHILDREN); "
    "print(round(used.ru_utime + used.ru_stime, 2), file=sys.stderr); sys.exit(done.returncode)"
)


def run_vegeta(running: RunningWay, targets_text: str, clients: int, seconds: float) -> tuple[list[str], str, float]:
    """The attack, from vegeta's container on the way's network, and its results as JSON lines; vegeta's CPU seconds.
    In a container of its own, not from this machine through the published port: a server that closes each
    connection (gunicorn's threads answer `Connection: close`) leaves one in TIME_WAIT per request on the client,
    and through docker-proxy this machine ran out of local ports within two ten-second loads (31,942 in TIME_WAIT);
    each container has its own."""
    image = build_loadgen_image("vegeta")
    targets = Path("/tmp/targets.json")
    inside = vegeta.closed_loop_command(targets, clients, seconds, vegeta.RESULTS_INSIDE)
    prefix = ["docker", "run", "--rm", "-i", "--network", running.network(), image, "python", "-c", _TIMED]
    timeout = seconds + vegeta.TIMEOUT_SECONDS + 90
    command, output, said = vegeta.attack_inside(prefix, f"cat > {targets} &&", inside, targets_text, timeout)
    return command, output, float(said.split()[-1])


def mix_load(
    running: RunningWay,
    session: Session,
    statuses: dict[int, int],
    clients: int,
    seconds: float,
    database: Database | None = None,
) -> MixResult:
    """The session's mix under `clients` clients; `statuses`: each request's expected status, by its line. Each
    write is marked with this load's own token, one of each sent before and every one looked up after."""
    token, port, host = secrets.token_hex(4), running.published_port, service_host(running)
    samples = send_samples(port, host, session, statuses, token)
    targets_text = vegeta_json_targets(session.mix, f"http://{host}", token)
    container = running.container_ids()["app"]
    cpu_before = container_cpu_seconds(container)
    with database_work(running, database) as db, Sampler(running.main_pid("app")) as sampler:
        command, output, loadgen_cpu = run_vegeta(running, targets_text, clients, seconds)
        cpu_after = container_cpu_seconds(container)
    results = [json.loads(line) for line in output.splitlines() if line.strip()]
    if not results:
        raise ValueError("vegeta sent no request")
    result = summarise(
        results,
        session.mix,
        statuses,
        clients,
        seconds,
        command,
        cpu=None if cpu_before is None or cpu_after is None else cpu_after - cpu_before,
        rss_mb=sampler.usage.rss_mb_peak,
        processes=len(running.processes("app")),
        loadgen_cpu=loadgen_cpu,
    )
    db_cpu, db_statements = per_request(db, result.requests - result.errors)
    result = replace(result, db_cpu_ms_per_request=db_cpu, db_statements_per_request=db_statements)
    if not any(spec.lookup for spec in session.mix):
        return result
    writes = look_up(port, host, session, token, acknowledged(results, statuses), samples)
    return replace(result, writes=writes)


def service_host(running: RunningWay) -> str:
    service = "nginx" if running.way.nginx else "app"
    return f"{running.address(service)}:{running.way.port}"


def summarise(
    results: list[dict[str, Any]],
    requests: list[RequestSpec],
    statuses: dict[int, int],
    clients: int,
    seconds: float,
    command: list[str],
    cpu: float | None,
    rss_mb: float | None,
    processes: int | None,
    loadgen_cpu: float | None,
) -> MixResult:
    """vegeta's results, one per request: its URL's fragment says which request of the file it was (two may share
    their method and path, and differ in body or expected status), and so which status it must have to count."""
    names = labels(requests)
    statuses_seen: Counter[str] = Counter()
    kinds: Counter[str] = Counter()
    answered: dict[int, list[float]] = defaultdict(list)  # per line: the latencies of the expected answers
    got: dict[int, Counter[str]] = defaultdict(Counter)  # per line: each status it got
    for result in results:
        line = _line_of(result, statuses)
        code = result["code"]
        statuses_seen[str(code)] += 1
        got[line][str(code)] += 1
        if code == statuses[line]:
            answered[line].append(result["latency"] / 1e6)
        else:
            kinds[error_kind(result["error"]) if code == 0 else "status"] += 1
    latencies = [latency for values in answered.values() for latency in values]
    failures = len(results) - len(latencies)
    ordered = sorted(latencies) + [float("inf")] * failures
    return MixResult(
        clients=clients,
        requests=len(results),
        rps=round(len(latencies) / seconds, 1),
        errors=failures,
        status_codes=dict(sorted(statuses_seen.items())),
        failure_kinds=dict(sorted(kinds.items())),
        p50_ms=rounded_rank(ordered, 0.5),
        p99_ms=rounded_rank(ordered, 0.99),
        per_type={names[line]: _per_request(line, statuses[line], answered[line], got[line]) for line in sorted(got)},
        cpu_ms_per_request=round(cpu * 1000 / len(latencies), 2) if cpu is not None and latencies else None,
        rss_mb_peak=rss_mb,
        processes=processes,
        loadgen_cpu_seconds=loadgen_cpu,
        command=command,
    )


def _line_of(result: dict[str, Any], statuses: dict[int, int]) -> int:
    found = request_of(result["url"])
    if found is None or found[0] not in statuses:
        raise ValueError(f"vegeta's result for {result['url']} names no request of the file")
    return found[0]


def _per_request(line: int, expect: int, answered: list[float], got: Counter[str]) -> dict[str, Any]:
    """One request of the file under load: its answers with its expected status, and every status it got."""
    requests = sum(got.values())
    ranked = sorted(answered) + [float("inf")] * (requests - len(answered))
    return {
        "line": line,
        "expect": expect,
        "requests": requests,
        "answered": len(answered),
        "errors": requests - len(answered),
        "statuses": dict(sorted(got.items())),
        "p50_ms": rounded_rank(ranked, 0.5),
        "p99_ms": rounded_rank(ranked, 0.99),
    }


@dataclass(frozen=True)
class RequestCost:
    """One request type sent alone, one after another, for a few seconds: what each cost the app's processes."""

    requests: int
    wall_ms: float  # from sending to the whole answer, on this machine's client
    cpu_ms: float | None  # the app's processes' CPU per request (the server's share included)
    waiting_ms: float | None  # the rest: waiting on a database, an API, a lock, or on the network
    profile: dict[str, float]  # where the CPU went: share per class (py-spy)
    samples: int  # py-spy's, of a thread holding the GIL: over sample_rate, the seconds of Python it saw
    sample_rate: int
    db_cpu_ms: float | None = None  # the reader's Postgres: its container's CPU per request
    db_statements: float | None = None  # and the statements it ran per request


def request_cost(
    running: RunningWay,
    request: RequestSpec,
    seconds: float = 3.0,
    most: int | None = None,
    database: Database | None = None,
) -> RequestCost:
    """`request` one after another for `seconds`, or `most` times where that comes first (a write: each one adds to
    the data the way's loads then read, and the other ways get none of them)."""
    container = running.container_ids()["app"]
    spy = subprocess.Popen(
        profile.command(container, round(seconds) + 1), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    time.sleep(1.0)  # py-spy's container starting: the samples then cover the requests
    with database_work(running, database) as db:
        cpu_before, started, count = container_cpu_seconds(container), time.monotonic(), 0
        while time.monotonic() - started < seconds and (most is None or count < most):
            ask(running.published_port, request)
            count += 1
        wall = time.monotonic() - started
        cpu_after = container_cpu_seconds(container)
    collapsed, _ = spy.communicate(timeout=60)
    cpu_ms = None if cpu_before is None or cpu_after is None else (cpu_after - cpu_before) * 1000 / count
    wall_ms = wall * 1000 / count
    shares, samples = app_shares(collapsed)
    db_cpu, db_statements = per_request(db, count)
    return RequestCost(
        count,
        round(wall_ms, 2),
        None if cpu_ms is None else round(cpu_ms, 2),
        None if cpu_ms is None else round(max(0.0, wall_ms - cpu_ms), 2),
        shares,
        samples,
        profile.RATE,
        db_cpu,
        db_statements,
    )


def frame_class(frame: str) -> str | None:
    """The playground's classes (bench/measure/profile.py), the app's own code by its package, and any other
    installed package by its name."""
    path = frame.rsplit("(", 1)[-1]
    if "/app/" in path:
        package = path.split("/app/", 1)[1].split("/", 1)[0].removesuffix(".py").split(":")[0]
        return f"the app: {package}"
    known = profile.category(frame)
    if known:
        return known
    if "-packages/" in path:
        return path.split("-packages/", 1)[1].split("/", 1)[0].removesuffix(".py").split(":")[0]
    return None


def app_shares(collapsed: str) -> tuple[dict[str, float], int]:
    """Each class's share of the samples with a Python frame (the innermost frame that names one), and their number."""

    def innermost_class(stack: str) -> str:
        return next((c for c in map(frame_class, reversed(stack.split(";"))) if c), profile.OTHER)

    counts = profile.sample_counts(collapsed, innermost_class)
    total = sum(counts.values())
    return ({name: round(count / total, 3) for name, count in counts.most_common()} if total else {}), total
