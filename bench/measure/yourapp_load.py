"""The measuring of `make yourapp`: the requests file's mix at a number of clients (vegeta in a closed loop, from
its JSON targets), read per request type; and what each request type costs alone (CPU, wall time, the rest spent
waiting, and where its CPU goes, by py-spy)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import time
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.containers.cgroup import container_cpu_seconds
from bench.containers.sampler import Sampler
from bench.containers.yourapp_ways import RunningWay
from bench.loadgen.percentiles import nearest_rank
from bench.loadgen.vegeta_targets import RequestSpec, vegeta_json_targets
from bench.measure import profile
from bench.measure.client import build_loadgen_image
from bench.measure.yourapp_checks import ask

TIMEOUT_SECONDS = 30


@dataclass(frozen=True)
class MixResult:
    """One closed-loop load of the mix: vegeta with `clients` workers, each sending its next request when the last
    is answered, for `seconds`."""

    clients: int
    requests: int
    rps: float  # answers with the expected status per second of the load
    errors: int  # requests without the expected status, or without an answer
    status_codes: dict[str, int]
    p50_ms: float | None
    p99_ms: float | None  # over every request, a failed one ranked slowest; None where the rank falls on one
    per_type: dict[str, dict[str, Any]]  # request type -> requests, errors, p50_ms, p99_ms
    cpu_ms_per_request: float | None  # the app's processes' CPU over the requests answered
    rss_mb_peak: float | None  # the app's processes together
    processes: int | None
    loadgen_cpu_seconds: float | None  # vegeta's own, where it ran on this machine: the measurement's own cost
    command: list[str]


def vegeta_command(targets: Path, clients: int, seconds: float, output: Path) -> list[str]:
    # -rate 0 with -max-workers: each worker sends its next request when its last is answered, a closed loop of
    # `clients` clients, as ab's -c; -format json: the file's methods, headers and bodies; -redirects -1: a redirect
    # is an answer of its own (vegeta follows ten by default), as the development server's was when verified.
    return ["vegeta", "attack", "-format", "json", "-targets", str(targets), "-rate", "0",
            "-max-workers", str(clients), "-workers", str(clients), "-redirects", "-1", "-duration", f"{seconds:g}s",
            "-timeout", f"{TIMEOUT_SECONDS}s", "-output", str(output)]  # fmt: skip


def run_vegeta(
    running: RunningWay, targets_text: str, clients: int, seconds: float
) -> tuple[list[str], str, float | None]:
    """The attack and its results as JSON lines; vegeta's CPU seconds where it ran here. vegeta on this machine where
    it is installed, else in its container on the way's network."""
    with tempfile.TemporaryDirectory(prefix="yourapp-") as folder:
        targets = Path(folder) / "targets.json"
        if shutil.which("vegeta"):
            targets.write_text(targets_text)
            output = Path(folder) / "results.bin"
            command = vegeta_command(targets, clients, seconds, output)
            attacked = subprocess.run(command, capture_output=True, text=True, timeout=seconds + TIMEOUT_SECONDS + 60)
            if attacked.returncode != 0:
                raise ValueError(f"vegeta failed: {attacked.stderr.strip()[-300:]}")
            encoded = subprocess.run(
                ["vegeta", "encode", "-to", "json", str(output)],
                capture_output=True,
                text=True,
                timeout=120,
                check=True,
            )
            return command, encoded.stdout, _children_cpu()
        image = build_loadgen_image("vegeta")
        inside = vegeta_command(Path("/dev/stdin"), clients, seconds, Path("/tmp/results.bin"))
        script = " ".join(inside) + " && vegeta encode -to json /tmp/results.bin"
        command = ["docker", "run", "--rm", "-i", "--network", running.network(), image, "sh", "-c", script]
        done = subprocess.run(
            command, input=targets_text, capture_output=True, text=True, timeout=seconds + TIMEOUT_SECONDS + 90
        )
        if done.returncode != 0:
            raise ValueError(f"vegeta failed: {done.stderr.strip()[-300:]}")
        return command, done.stdout, None


_children_seen = 0.0


def _children_cpu() -> float:
    """The CPU seconds of the child processes that ended since the last call (vegeta's)."""
    global _children_seen
    times = os.times()
    total = times.children_user + times.children_system
    spent, _children_seen = total - _children_seen, total
    return round(spent, 2)


def mix_load(running: RunningWay, requests: list[RequestSpec], clients: int, seconds: float) -> MixResult:
    base = f"http://127.0.0.1:{running.published_port}" if shutil.which("vegeta") else f"http://{service_host(running)}"
    targets_text = vegeta_json_targets(requests, base)
    expected = {(r.method, r.target): r.expect for r in requests}
    container = running.container_ids()["app"]
    cpu_before = container_cpu_seconds(container)
    _children_cpu()
    with Sampler(running.main_pid("app")) as sampler:
        command, output, loadgen_cpu = run_vegeta(running, targets_text, clients, seconds)
    cpu_after = container_cpu_seconds(container)
    results = [json.loads(line) for line in output.splitlines() if line.strip()]
    if not results:
        raise ValueError("vegeta sent no request")
    return summarise(
        results,
        expected,
        clients,
        seconds,
        command,
        cpu=None if cpu_before is None or cpu_after is None else cpu_after - cpu_before,
        rss_mb=sampler.usage.rss_mb_peak,
        processes=len(running.processes("app")),
        loadgen_cpu=loadgen_cpu,
    )


def service_host(running: RunningWay) -> str:
    service = "nginx" if running.way.nginx else "app"
    return f"{running.address(service)}:{running.way.port}"


def summarise(
    results: list[dict[str, Any]],
    expected: dict[tuple[str, str], int | None],
    clients: int,
    seconds: float,
    command: list[str],
    cpu: float | None,
    rss_mb: float | None,
    processes: int | None,
    loadgen_cpu: float | None,
) -> MixResult:
    """vegeta's results, one per request: its URL says which request of the file it was."""
    statuses: Counter[str] = Counter()
    by_type: dict[str, list[float]] = defaultdict(list)
    failed_by_type: Counter[str] = Counter()
    latencies: list[float] = []
    failures = 0
    for result in results:
        target = "/" + result["url"].split("/", 3)[3] if result["url"].count("/") >= 3 else "/"
        name = f"{result['method']} {target}"
        want = expected.get((result["method"], target))
        code = result["code"]
        statuses[str(code)] += 1
        good = code != 0 and (code == want if want else code < 500)
        if good:
            latencies.append(result["latency"] / 1e6)
            by_type[name].append(result["latency"] / 1e6)
        else:
            failures += 1
            failed_by_type[name] += 1
    ordered = sorted(latencies) + [float("inf")] * failures
    answered = len(latencies)

    def rank(values: list[float], share: float) -> float | None:
        value = nearest_rank(values, share) if values else float("inf")
        return None if value == float("inf") else round(value, 1)

    per_type = {}
    for name in sorted(set(by_type) | set(failed_by_type)):
        ranked = sorted(by_type[name]) + [float("inf")] * failed_by_type[name]
        per_type[name] = {
            "requests": len(ranked),
            "errors": failed_by_type[name],
            "p50_ms": rank(ranked, 0.5),
            "p99_ms": rank(ranked, 0.99),
        }
    return MixResult(
        clients=clients,
        requests=len(results),
        rps=round(answered / seconds, 1),
        errors=failures,
        status_codes=dict(sorted(statuses.items())),
        p50_ms=rank(ordered, 0.5),
        p99_ms=rank(ordered, 0.99),
        per_type=per_type,
        cpu_ms_per_request=round(cpu * 1000 / answered, 2) if cpu is not None and answered else None,
        rss_mb_peak=rss_mb,
        processes=processes,
        loadgen_cpu_seconds=loadgen_cpu,
        command=command,
    )


@dataclass(frozen=True)
class RequestCost:
    """One request type sent alone, one after another, for a few seconds: what each cost the app's processes."""

    requests: int
    wall_ms: float  # from sending to the whole answer, on this machine's client
    cpu_ms: float | None  # the app's processes' CPU per request (the server's share included)
    waiting_ms: float | None  # the rest: waiting on a database, an API, a lock, or on the network
    profile: dict[str, float]  # where the CPU went: share per class (py-spy)
    samples: int


def request_cost(running: RunningWay, request: RequestSpec, seconds: float = 3.0) -> RequestCost:
    container = running.container_ids()["app"]
    spy = subprocess.Popen(
        profile.command(container, round(seconds) + 1), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    time.sleep(1.0)  # py-spy's container starting: the samples then cover the requests
    cpu_before, started, count = container_cpu_seconds(container), time.monotonic(), 0
    while time.monotonic() - started < seconds:
        ask(running.published_port, request)
        count += 1
    wall = time.monotonic() - started
    cpu_after = container_cpu_seconds(container)
    collapsed, _ = spy.communicate(timeout=60)
    cpu_ms = None if cpu_before is None or cpu_after is None else (cpu_after - cpu_before) * 1000 / count
    wall_ms = wall * 1000 / count
    shares, samples = app_shares(collapsed)
    return RequestCost(
        count,
        round(wall_ms, 2),
        None if cpu_ms is None else round(cpu_ms, 2),
        None if cpu_ms is None else round(max(0.0, wall_ms - cpu_ms), 2),
        shares,
        samples,
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
    counts: Counter[str] = Counter()
    for line in collapsed.splitlines():
        stack, _, number = line.rpartition(" ")
        if not (stack and number.isdigit() and profile.python_frames(stack)):
            continue
        found = next((c for c in map(frame_class, reversed(stack.split(";"))) if c), profile.OTHER)
        counts[found] += int(number)
    total = sum(counts.values())
    return ({name: round(count / total, 3) for name, count in counts.most_common()} if total else {}), total
