"""`make latency`: each concurrent target under an open-loop load at fixed rates, from a quarter of what it
sustains in a closed loop to half again as much; latency percentiles against the offered rate, one record per
target and rate in OUT/results.json (mode "latency"), rendered to a table and the "hockey stick" chart by
bench/modes/latency/render.py.

The rates are fractions of a base rate measured first for each target, in the same run: hey, a closed loop
that opens all its connections at once (bench/loadgen/hey.py), sends 3 rounds from as many clients as the target holds
at once (1000 at most), and the base is the answers per second it got. Not a `make bench` result set: machines
here differ by up to 40 % from one day to the next (FACTS.md), which would put the knee anywhere; not ab:
its solo first request costs a whole round, which would understate the base, and ab opens a connection per
request where vegeta, like hey, keeps them alive, so the server pays the same per request in both runs.

A closed loop still understates what a server sustains open loop: its first round opens every connection at
once and its last one ends on the slowest answer. Measured here (2026-11-23), hey's 3 rounds got 84 % of the
200 answers per second sync-gunicorn's 200 threads allow, and gunicorn's gevent worker then kept up open loop
at 110 % of its own base with a P99 within 15 % of the delay. Up to 110 % neither curve bent, so the default
rates go on to 125 % and 150 %, past the knee of both.

The load itself is vegeta's (bench/loadgen/vegeta.py: why vegeta, and what its latencies measure), from the host
against the published port, through docker-proxy as `make bench` from the host (on a host without vegeta, from its
container on the scenario's network, bench/loadgen/Dockerfile-vegeta; the record's `client` says which): a target
that cannot keep up shows it as an achieved rate below the offered one, failures, and latencies that grow with
each second of the attack, since vegeta sends on schedule whatever the server does.
"""

from __future__ import annotations

import shutil
import sys
from dataclasses import replace

from bench.containers.compose import RunningScenario
from bench.containers.scenarios import SCENARIOS, Target, load_targets
from bench.loadgen import vegeta
from bench.measure.client import Client, build_loadgen_image, choose_client, run_loadgen, verify, warm_up
from bench.measure.resultset import ResultSet
from bench.measure.scenario_start import ScenarioStart
from bench.modes.latency import render as renderer
from bench.modes.latency.record import LatencyResult
from bench.options import Option, Options

FRACTIONS = (0.25, 0.5, 0.75, 0.9, 1.0, 1.1, 1.25, 1.5)
BASE_ROUNDS = 3
# Past a few thousand connections docker-proxy gives out (docs/many-clients.md): the base stays below that.
BASE_CLIENTS_MAX = 1000
VEGETA_IMAGE = "flask-playground/vegeta"  # bench/loadgen/Dockerfile-vegeta: for hosts without vegeta


def latency_record(target: Target, delay: float, place: str, problem: str | None) -> LatencyResult:
    """The record before its load: the target, the delay, where vegeta runs, and why the target cannot be trusted
    (None: it answered right)."""
    return LatencyResult(
        **target.record_fields(),
        delay=delay,
        loadgen="vegeta",
        keepalive=True,
        client=place,
        verified=problem is None,
        problem=problem,
        ok=False,  # judged as it is kept, once its problem is final
    )


def measure_base(record: LatencyResult, target: Target, running: RunningScenario, client: Client) -> LatencyResult:
    """What the target sustains in a closed loop with as many clients as it holds: answers per second."""
    clients = min(target.concurrency or BASE_CLIENTS_MAX, BASE_CLIENTS_MAX)
    warm_up(target, running, client, clients)
    command, output = run_loadgen(target, running, client, clients * BASE_ROUNDS, clients, record.delay)
    try:
        result = client.loadgen.parse(output)
    except ValueError as error:
        return replace(record, base_command=" ".join(command), problem=f"base rate: {client.loadgen.name}: {error}")
    answered = result.complete - result.failed - result.non2xx
    return replace(
        record,
        base_command=" ".join(command),
        base_rps=round(answered / result.seconds, 1),
        base_failed=result.failed + result.non2xx,
        problem=None,
    )


def load_at(
    record: LatencyResult, target: Target, running: RunningScenario, rate: int, duration: float
) -> LatencyResult:
    """vegeta from the host against the published port, or from its container on the scenario's network."""
    container = running.loadgen_run(VEGETA_IMAGE) if record.client == "container" else None
    url = f"{target.url_inside if container else target.url}?delay={record.delay:g}"
    try:
        command, output = vegeta.attack(url, rate, duration, container)
        result = vegeta.parse_results(output, rate, target.expected_body(record.delay))
    except ValueError as error:
        return replace(record, offered_rps=rate, problem=str(error))
    problem = None
    if result.sent_rps < 0.95 * rate:
        # Then the machine, not the server, set the pace: the figures answer another question.
        problem = f"vegeta sent {result.sent_rps} requests/s of the {rate} offered"
    percentiles = result.percentiles_ms  # by name, not spread: mypy checks each field's type
    return replace(
        record,
        command=" ".join(command),
        offered_rps=rate,
        duration_s=duration,
        requests=result.requests,
        sent_rps=result.sent_rps,
        achieved_rps=result.achieved_rps,
        success_ratio=result.success_ratio,
        keeps_up=result.keeps_up,
        status_codes=result.status_codes,
        failure_kinds=result.failure_kinds,
        p50_ms=percentiles["p50_ms"],
        p90_ms=percentiles["p90_ms"],
        p99_ms=percentiles["p99_ms"],
        p999_ms=percentiles["p999_ms"],
        max_ms=result.max_ms,
        send_lag_ms_max=result.send_lag_ms_max,
        problem=problem,
    )


def fractions(text: str) -> list[float]:
    return sorted(float(value) for value in text.replace(",", " ").split())


OPTIONS = Options(
    "latency",
    "python -m bench.modes.latency",
    (
        Option.some_of("--scenarios", "SCENARIOS", SCENARIOS, "SCENARIO"),
        Option.out("-latency"),
        Option(
            "--fractions",
            "FRACTIONS",
            "of each target's base rate",
            {"type": fractions, "default": list(FRACTIONS)},
            "rates",
        ),
        Option(
            "--rates",
            "RATES",
            "requests per second, the same for every target: no base run",
            {"type": fractions},
            "rates",
        ),
        Option("--duration", "DURATION", "seconds of load per rate", {"type": float, "default": 10.0}),
        Option("--delay", "DELAY", "seconds each request waits on slow_api", {"type": float, "default": 1.0}),
    ),
)


def main(argv: list[str] | None = None) -> int:
    arguments = OPTIONS.arguments(argv)
    args = OPTIONS.parser(__doc__).parse_args(arguments)
    results = ResultSet("python -m bench.modes.latency", "latency", arguments, args.out, suffix="-latency")
    # vegeta on the host where it is installed (bash .ci/vegeta, with Go 1.22 or later), else in its container.
    place = "host" if shutil.which("vegeta") else "container"
    if place == "container":
        print("vegeta is not on this machine: it runs in a container on each scenario's network", flush=True)
        build_loadgen_image("vegeta")
    client = None if args.rates else choose_client("auto", "hey")
    targets = [target for scenario in args.scenarios for target in load_targets(scenario) if target.load == "full"]

    kept: list[LatencyResult] = []

    def keep(record: LatencyResult) -> None:
        record = record.judged()
        kept.append(record)
        results.add(record)
        if record.ok:
            percentiles = ", ".join(
                f"P{share * 100:g} {getattr(record, key)} ms" for key, share in vegeta.PERCENTILES.items()
            )
            print(f"    {record.achieved_rps} of {record.offered_rps} requests/s; {percentiles}", flush=True)
        else:
            print(f"    NOT OK: {record.problem}", flush=True)

    for scenario in dict.fromkeys(target.scenario for target in targets):
        print(f"{scenario}: building and starting", flush=True)
        ours = [target for target in targets if target.scenario == scenario]
        with ScenarioStart(results.metadata["packages"]) as start:
            running = start.up(RunningScenario(scenario))
            for target in ours:
                record = latency_record(target, args.delay, place, verify(target, args.delay))
                if record.verified and client is not None:
                    print(f"{scenario} / {target.name}: base rate, {client.loadgen.name} closed loop", flush=True)
                    record = measure_base(record, target, running, client)
                if record.problem:
                    keep(record)
                    continue
                base = record.base_rps or 0.0  # measured, unless --rates set the rates
                plan = args.rates or [fraction * base for fraction in args.fractions]
                for index, rate in enumerate(plan):
                    offered = max(1, round(rate))
                    fraction = None if args.rates else args.fractions[index]
                    print(f"{scenario} / {target.name}: {offered} requests/s for {args.duration:g} s", flush=True)
                    keep(load_at(replace(record, fraction=fraction), target, running, offered, args.duration))
        if start.problem:
            for target in ours:
                keep(latency_record(target, args.delay, place, start.problem))
    failures = sorted({record.target for record in kept if not record.ok})
    renderer.render(results.out, results.finish())
    return results.say(failures, "results.json, results.md, latency.png")


if __name__ == "__main__":
    sys.exit(main())
