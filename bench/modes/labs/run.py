"""`make labs`: the failure labs of labs/, how gevent fails and what fixes it (docs/labs.md). Each lab starts its
broken and fixed targets side by side and loads them alike; one record per target in OUT/results.json, rendered to
OUT/results.md and OUT/index.html from that file alone.

Every request comes from labs/burst.py in a container on the lab's network, each on its own new connection,
straight to the server (no docker-proxy in between), with its connect time, latency, status and error. What the
servers' containers show is read from outside: their log, and their network namespace's /proc/net files (from this
machine's /proc, or inside the container where this machine cannot see its processes).
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import asdict
from typing import Any

from bench.containers.compose import RunningScenario
from bench.containers.scenarios import LABS, ROOT, Target, load_targets
from bench.loadgen.closed_loop import LOADGENS
from bench.measure.client import choose_client
from bench.measure.resultset import Progress, ResultSet
from bench.measure.scenario_start import ScenarioStart
from bench.measure.server_facts import cpu_ms_per_unit
from bench.models.spread import median_of
from bench.modes.labs import render as renderer
from bench.modes.labs.record import (
    Answered,
    AtOnceResult,
    CpuStarvationResult,
    LabResult,
    PoolDefaultResult,
    SmallBacklogResult,
)
from bench.modes.labs.render import COLUMNS, cell
from bench.options import Option, Options

# The ab image (python:3.14-slim with ab), for its Python: burst.py needs nothing else.
CLIENT_IMAGE = LOADGENS["ab"].image
ANSWER = "Hi there! slow api response"
SLOW_API_PORT = 8000


def plan(target: Target, count: int, query: str, start: float = 0.0, every: float = 0.0) -> str:
    """burst.py's COUNT,START,EVERY,URL: `count` requests to the target, `every` seconds apart from `start`."""
    return f"{count},{start:g},{every:g},{target.url_inside}?{query}"


def burst(running: RunningScenario, *plans: str, timeout: float = 60.0) -> tuple[list[str], list[dict[str, Any]]]:
    """The command, and one record per request (in the order of the plans), from burst.py on the lab's network;
    a request unanswered after `timeout` seconds ends as a TimeoutError."""
    client = ROOT / "labs" / "burst.py"
    command = [
        "docker", "run", "--rm", "--network", running.network(), "--volume", f"{client}:/burst.py:ro",
        CLIENT_IMAGE, "python", "/burst.py", "--timeout", f"{timeout:g}", *plans,
    ]  # fmt: skip
    finished = subprocess.run(command, capture_output=True, text=True, check=True, timeout=timeout + 120)
    return command, [json.loads(line) for line in finished.stdout.splitlines()]


def summarise(answers: list[dict[str, Any]], delay: float) -> Answered:
    """What every lab reports about a set of requests (a lab's record is made of Answered, or takes some of it)."""
    good = [a for a in answers if a.get("status") == 200 and a.get("body") == ANSWER]
    failures = Counter(a.get("error") or f"status {a['status']}" for a in answers if a not in good)
    latencies = [a["seconds"] for a in answers]
    connects = [a["connect"] for a in answers if a["connect"] is not None]
    elapsed = max(a["sent"] + a["seconds"] for a in answers) - min(a["sent"] for a in answers)
    return Answered(
        requests=len(answers),
        answered=len(good),
        failures=dict(failures),
        elapsed_s=round(elapsed, 3),
        p50_s=round(median_of(latencies), 3),
        max_s=round(max(latencies), 3),
        connect_max_s=round(max(connects), 3) if connects else None,
        connects_over_1s=sum(seconds >= 1 for seconds in connects),
        late_over_1s=sum(seconds >= delay + 1 for seconds in latencies),
    )


def log_count(running: RunningScenario, service: str, text: str) -> int:
    """How many times `text` appears in a service's log so far."""
    return running.compose("logs", "--no-color", service).stdout.count(text)


def slow_api_sockets(running: RunningScenario, service: str) -> int:
    """TCP sockets from a service's container to slow_api, open or closed within the last minute (TIME_WAIT), read
    from its network namespace: after a load, less before, the connections the load opened."""
    total = 0
    for table in ("tcp", "tcp6"):
        for line in running.net_file(service, table).splitlines()[1:]:
            remote = line.split()[2]  # hex address:port
            total += int(remote.rsplit(":", 1)[1], 16) == SLOW_API_PORT
    return total


def listen_counters(running: RunningScenario, service: str) -> dict[str, int]:
    """The kernel's counts of connections a full listen queue turned away, in the service's network namespace."""
    lines = running.net_file(service, "netstat").splitlines()
    names, values = (line.split()[1:] for line in lines if line.startswith("TcpExt:"))
    counters = dict(zip(names, map(int, values), strict=True))
    return {"ListenOverflows": counters["ListenOverflows"], "ListenDrops": counters["ListenDrops"]}


def lab_fields(target: Target) -> dict[str, Any]:
    """The fields of a lab's record that say which target it measured: its lab, variant and setting."""
    return {"lab": target.scenario, **target.record_fields(), "variant": target.variant, "setting": target.setting}


def at_once(running: RunningScenario, n: int = 10, delay: float = 0.5) -> list[AtOnceResult]:
    """late-patch and blocking-call: n requests at once to each target. One at a time takes n x delay (a serial
    ratio of 1, n delays); side by side, one delay (a ratio of 1 / n); in rounds of k at once, n / k delays."""
    records = []
    for target in load_targets(running.scenario):
        command, answers = burst(running, plan(target, n, f"delay={delay:g}"))
        figures = summarise(answers, delay)
        records.append(
            AtOnceResult(
                **lab_fields(target),
                n=n,
                delay=delay,
                commands=[command],
                **vars(figures),
                serial_ratio=round(figures.elapsed_s / (n * delay), 2),
                delays=round(figures.elapsed_s / delay, 1),
                monkeypatch_warnings=log_count(running, target.service, "MonkeyPatchWarning"),
            )  # fmt: skip
        )
    return records


def pool_default(
    running: RunningScenario, n: int = 200, delay: float = 1.0, rounds: int = 2
) -> list[PoolDefaultResult]:
    """n requests at once to each target, `rounds` times: how long each round takes, how many requests took half a
    delay longer than their own (behind aiohttp's limit: they waited for another request's connection), how many
    connections to slow_api each round opened, and urllib3's warnings."""
    records = []
    for target in load_targets(running.scenario):
        warnings_before = log_count(running, target.service, "Connection pool is full")
        sockets = slow_api_sockets(running, target.service)
        commands, seen, slow, opened = [], [], [], []
        for _ in range(rounds):
            command, answers = burst(running, plan(target, n, f"delay={delay:g}"))
            commands.append(command)
            seen.append(summarise(answers, delay))
            slow.append(sum(a["seconds"] >= 1.5 * delay for a in answers))  # waited for another's connection
            now = slow_api_sockets(running, target.service)
            opened.append(now - sockets)
            sockets = now
        records.append(
            PoolDefaultResult(
                **lab_fields(target),
                n=n,
                delay=delay,
                commands=commands,
                # Each round's figures as the set keeps them, one object a round.
                per_round=[asdict(one) | {"slow_requests": count} for one, count in zip(seen, slow, strict=True)],
                answered=sum(one.answered for one in seen),
                requests=sum(one.requests for one in seen),
                elapsed_s=[one.elapsed_s for one in seen],
                slow_requests=slow,
                connections_opened=opened,
                pool_full_warnings=log_count(running, target.service, "Connection pool is full") - warnings_before,
            )  # fmt: skip
        )
    return records


def small_backlog(
    running: RunningScenario, n: int = 1000, delay: float = 1.0, timeout: float = 60.0
) -> list[SmallBacklogResult]:
    """n connections at once to each target: how many got through at once, how many only after their SYN was sent
    again (a second or more to connect), how many were refused, reset or never answered within `timeout`, and the
    kernel's own count of the connections a full queue turned away."""
    records = []
    for target in load_targets(running.scenario):
        before = listen_counters(running, target.service)
        command, answers = burst(running, plan(target, n, f"delay={delay:g}"), timeout=timeout)
        after = listen_counters(running, target.service)
        records.append(
            SmallBacklogResult(
                **lab_fields(target),
                n=n,
                delay=delay,
                timeout=timeout,
                commands=[command],
                **vars(summarise(answers, delay)),
                ListenOverflows=after["ListenOverflows"] - before["ListenOverflows"],
                ListenDrops=after["ListenDrops"] - before["ListenDrops"],
            )  # fmt: skip
        )
    return records


def cpu_starvation(
    running: RunningScenario, units: int = 1000, cheap: int = 9, delay: float = 0.1, every: float = 0.1
) -> list[CpuStarvationResult]:
    """One ?cpu=`units` request, then `cheap` requests at ?delay=`delay`, one every `every` seconds from `every`
    on, while it runs: their latency, against the `delay` they would take alone."""
    records = []
    for target in load_targets(running.scenario):
        heavy = plan(target, 1, f"delay=0&cpu={units}")
        light = plan(target, cheap, f"delay={delay:g}", start=every, every=every)
        command, answers = burst(running, heavy, light)
        latencies = [a["seconds"] for a in answers[1:]]
        figures = summarise(answers, delay)
        records.append(
            CpuStarvationResult(
                **lab_fields(target),
                units=units,
                cheap=cheap,
                delay=delay,
                every=every,
                commands=[command],
                requests=figures.requests,
                answered=figures.answered,
                cpu_ms_per_unit=cpu_ms_per_unit(running, target.service),
                heavy_s=answers[0]["seconds"],
                cheap_s=latencies,
                cheap_p50_s=round(median_of(latencies), 3),
                cheap_max_s=round(max(latencies), 3),
                # Held up by more than 0.3 s: far beyond what a cheap request costs here.
                cheap_held_up=sum(seconds >= delay + 0.3 for seconds in latencies),
            )  # fmt: skip
        )
    return records


MEASURE: dict[str, Callable[[RunningScenario], Sequence[LabResult]]] = {
    "late-patch": at_once,
    "blocking-call": lambda running: at_once(running, n=20, delay=0.5),
    "pool-default": pool_default,
    "small-backlog": small_backlog,
    "cpu-starvation": cpu_starvation,
}


OPTIONS = Options(
    "labs",
    "python -m bench.modes.labs",
    (
        Option.some_of("--labs", "LABS", LABS, "LAB"),
        Option.out("-labs"),
    ),
)


def main(argv: list[str] | None = None) -> int:
    arguments = OPTIONS.arguments(argv)
    args = OPTIONS.parser(__doc__).parse_args(arguments)
    results = ResultSet("python -m bench.modes.labs", "labs", arguments, args.out, suffix="-labs")
    choose_client("container")  # builds the client's image if it is missing
    results.metadata["root"] = str(ROOT)
    progress = Progress(len(args.labs))
    failed = []
    for lab in args.labs:
        progress.show(lab, "building, starting and measuring")
        # burst.py's container failing or timing out (check=True) fails the lab as a scenario that does not start.
        with ScenarioStart(results.metadata["packages"], also=(subprocess.SubprocessError,)) as start:
            records = MEASURE[lab](start.up(RunningScenario(lab)))
        if start.error:
            print(f"    {lab} failed: {start.error}", flush=True)
            failed.append(lab)
            continue
        for record in records:
            print(f"    {record.target} ({record.variant}): {summary_line(record)}", flush=True)
        for record in records:
            results.add(record)
        progress.done += 1
    out = results.out
    renderer.render(out, results.finish())  # results.md and index.html
    print(f"\nresults in {out}: results.json, results.md, index.html" + (f"; FAILED: {failed}" if failed else ""))
    return 1 if failed else 0


def summary_line(record: LabResult) -> str:
    keys = [key for _, key in COLUMNS[record.lab] if key != "cheap_s"]
    return ", ".join(f"{key} {cell(record.figure(key))}" for key in keys)


if __name__ == "__main__":
    sys.exit(main())
