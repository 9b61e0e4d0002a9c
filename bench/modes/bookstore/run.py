"""`make bookstore`: the bookstore app (bookstore.yml) served each way, under loads that look like users', each
beside what the database alone does with the same SQL at the same concurrency.

Every target's containers start together; all but the one measured are paused, so they cost no CPU and send no
healthcheck, and each keeps its pool, its caches and its JIT's work for its next turn. A round is one load at one
number of clients: each target in turn (one request of each kind verified, a short warm-up, a few seconds of
Postgres with nothing but the healthchecks running, then wrk for SECONDS from a container on the scenario's
network, bench/modes/bookstore.lua drawing the ids and pages, while the app's and Postgres's processes are
sampled), then, every app paused, pgbench for as long from a container of the postgres image on the same network,
replaying the SQL captured from the targets for the same endpoint (bench/loadgen/pgbench.py) at the concurrency
the database sees from a target, once for all the targets that share scripts, clients and protocol. A target's
throughput reads as a share of the database's: `vs_database`. Rounds repeat (--repeats), over a sweep of clients
(--clients); a CPU probe on the host around each wrk and each pgbench marks the measurements the machine's speed
moved under (`cpu_probe`, its `steady`). A target's first warm-up lasts until its CPU per request stops falling
(PyPy's JIT).

Every figure compares within one run only: machines here differ by up to 2x from one session to the next.
"""

from __future__ import annotations

import argparse
import shutil
import sys
from collections.abc import Iterator
from dataclasses import replace

from bench.containers.scenarios import Target
from bench.loadgen import pgbench
from bench.measure import profile
from bench.measure.bookstore import (
    BY_NAME,
    DEFAULT_READS_END,
    DEFAULT_SCALE,
    SCENARIO,
    BookstoreLoad,
    BookstoreScenario,
    bookstore_targets,
    database_facts,
)
from bench.measure.client import choose_client
from bench.measure.resultset import Progress, ResultSet
from bench.measure.scenario_start import ScenarioStart
from bench.modes.bookstore import render as renderer
from bench.modes.bookstore.record import BookstoreResult
from bench.modes.bookstore.round import (
    Prepared,
    RunPlan,
    bookstore_fields,
    measure_round,
    pause_all,
    recreate_apps,
)
from bench.options import Option, Options

SECONDS = 12  # the slow page's 1.5 times as long
PROFILE_SECONDS = 8  # py-spy on each target in each load's first round, after its measurement
# A target's first warm-up lasts until its CPU per request stops falling (bench/modes/bookstore/wrk_load.py, warm_up):
# PyPy's JIT compiles its hot paths only after thousands of requests. At most WARM_LIMIT seconds.
WARM_LIMIT = 120
LADDER_BASE = "bookstore-gunicorn-gevent"  # the unchanged app, the ladder's first rung (bookstore/ladder.py)


def chosen_targets(every: list[Target], names: list[str] | None, ladder: bool) -> list[Target]:
    """The targets named, or by default the ways of serving; with ladder, the unchanged app as rung 0 and the
    rungs."""
    if ladder:
        return [replace(target, rung=0) if target.name == LADDER_BASE else target
                for target in every if target.rung is not None or target.name == LADDER_BASE]  # fmt: skip
    return [target for target in every if target.name in names] if names else [t for t in every if t.rung is None]


def profiled_clients(loads: list[BookstoreLoad]) -> frozenset[tuple[str, int]]:
    """Per load, the number of clients it is profiled at: its own, or the swept one nearest to it."""
    chosen: dict[str, int] = {}
    for load in loads:
        own = BY_NAME[load.name].clients
        best = chosen.get(load.name)
        if best is None or abs(load.clients - own) < abs(best - own):
            chosen[load.name] = load.clients
    return frozenset(chosen.items())


def endings_in_turn(endings: list[str], repeat: int) -> list[str]:
    """The endings of the reads, every other repeat the other way round: a switch recreates every app container,
    so each repeat starts with the ending the last one ended with."""
    return endings if repeat % 2 else endings[::-1]


def run(
    running: BookstoreScenario,
    targets: list[Target],
    loads: list[BookstoreLoad],
    plan: RunPlan,
    endings: list[str],
    repeats: int,
    progress: Progress,
) -> Iterator[BookstoreResult]:
    """Every repeat, ending, load and number of clients in turn, each a round of the targets."""
    prepared: dict[str, Prepared] = {}
    created_with = running.environment["READS_END_WITH"]
    pause_all(running, targets)
    for repeat in range(1, repeats + 1):
        for ending in endings_in_turn(endings, repeat):
            if ending != created_with:
                progress.show(SCENARIO, f"recreating the apps with READS_END_WITH={ending}")
                recreate_apps(running, targets, ending)
                created_with = ending
                prepared.clear()  # new containers: captured and warmed again
            for load in loads:
                yield from measure_round(running, targets, load, plan, ending, prepared, progress, repeat)


def clients_of(args: argparse.Namespace, load: str) -> list[int]:
    """The numbers of clients a load runs at: --clients, or its sweep with --sweep, or its own."""
    own = BY_NAME[load]
    return list(args.clients or (args.sweep and own.sweep) or [own.clients])


OPTIONS = Options(
    "bookstore",
    "python -m bench.modes.bookstore",
    (
        Option(
            "--scale",
            "SCALE",
            "authors in the data (its own volume)",
            {"type": int, "default": DEFAULT_SCALE},
            unset=str(DEFAULT_SCALE),
        ),
        Option("--targets", "TARGETS", "default: every target of bookstore.yml", {"nargs": "*", "metavar": "TARGET"}),
        Option.some_of("--loads", "LOADS", BY_NAME, "LOAD"),
        Option(
            "--clients",
            "CLIENTS",
            "every load at each of these numbers of clients; default: each load's own",
            {"nargs": "+", "type": int, "metavar": "N"},
        ),
        Option("--sweep", "SWEEP", "each load at its sweep's clients (author and slow)", {"action": "store_true"}),
        Option("--repeats", "REPEAT", "rounds of every load, each with its reference", {"type": int, "default": 1}),
        Option("--seconds", "SECONDS", "of wrk, and of pgbench, per measurement", {"type": int, "default": SECONDS}),
        Option(
            "--warm-limit",
            "WARM_LIMIT",
            "a target's first warm-up ends when its CPU per request stops falling, or after this long",
            {"type": int, "default": WARM_LIMIT, "metavar": "SECONDS"},
        ),
        Option(
            "--reads-end-with",
            "READS_END_WITH",
            "how the app's reads end (rollback, commit, or both: each target"
            " measured with each in turn), and so whether its statements stay prepared (docs/bookstore.md)",
            {"nargs": "+", "choices": pgbench.PROTOCOL, "metavar": "ENDING", "default": DEFAULT_READS_END.split()},
        ),
        Option(
            "--ladder",
            "LADDER",
            "the ladder instead of the ways of serving: the unchanged one-process gevent"
            " target, then each rung of bookstore/ladder.py's changes (with --loads author, its endpoint)",
            {"action": "store_true"},
        ),
        Option(
            "--at-app-rate",
            "AT_APP_RATE",
            "in the first round, pgbench also paced to each target's own requests"
            " per second: Postgres's CPU per transaction at the app's pace",
            {"action": "store_true"},
        ),
        Option.out("-bookstore"),
        Option(
            "--profile-seconds",
            None,
            "py-spy on each target for this long in each load's first round (0: no profile)",
            {"type": int, "default": PROFILE_SECONDS, "metavar": "SECONDS"},
        ),
    ),
)


def main(argv: list[str] | None = None) -> int:
    parser = OPTIONS.parser(__doc__)
    arguments = OPTIONS.arguments(argv)
    args = parser.parse_args(arguments)
    if args.repeats < 1 or any(clients < 1 for clients in args.clients or []):
        parser.error("--repeats and --clients take numbers of at least 1")
    if args.ladder and (args.targets or len(args.reads_end_with) > 1):
        parser.error("--ladder chooses its targets, and each rung its own ending of the reads")
    environment = {"BOOKSTORE_SCALE": str(args.scale), "READS_END_WITH": args.reads_end_with[0]}
    every = bookstore_targets(environment)
    unknown = set(args.targets or []) - {target.name for target in every}
    if unknown:
        raise SystemExit(f"unknown targets {sorted(unknown)}; choose from {[t.name for t in every]}")
    targets = chosen_targets(every, args.targets, args.ladder)
    loads = [replace(BY_NAME[name], clients=clients) for name in args.loads for clients in clients_of(args, name)]
    results = ResultSet("python -m bench.modes.bookstore", "bookstore", arguments, args.out, suffix="-bookstore")
    choose_client("container", "wrk")  # builds wrk's image
    if not shutil.which("docker"):
        raise SystemExit("make bookstore needs Docker")
    about = results.metadata
    about |= {"scale": args.scale, "seconds": args.seconds, "loads": [load.__dict__ for load in loads]}
    about |= {"reads_end_with": args.reads_end_with, "repeat": args.repeats, "warm_limit_s": args.warm_limit}
    if args.ladder:
        about["ladder"] = True
    endings = args.reads_end_with
    progress = Progress(len(targets) * len(loads) * len(endings) * args.repeats)

    kept: list[BookstoreResult] = []

    def keep(record: BookstoreResult) -> None:
        record = record.judged()
        kept.append(record)
        results.add(record)
        progress.done += 1
        share = f", {record.vs_database:.2f} of the database alone" if record.vs_database else ""
        verdict = "ok" if record.ok else f"NOT OK: {record.problem}"
        print(f"    {record.target} {record.load} -c {record.clients}: {record.rps or '-'} requests/s"
              f"{share}, {verdict}", flush=True)  # fmt: skip

    progress.show(SCENARIO, f"building and starting, SCALE={args.scale} (a new size generates its data first)")
    if args.profile_seconds:
        profile.build_image()
    about["profile_seconds"] = args.profile_seconds
    plan = RunPlan(
        args.scale, args.seconds, args.warm_limit, results.out, profile_seconds=args.profile_seconds,
        profiled=profiled_clients(loads), at_app_rate=args.at_app_rate,
    )  # fmt: skip
    with ScenarioStart(about["packages"]) as start:
        running = start.up(BookstoreScenario(environment, [target.service for target in targets]))
        about["database"] = database_facts(running)
        for record in run(running, targets, loads, plan, endings, args.repeats, progress):
            keep(record)
    if start.reason:
        measured = {(r.target, r.load, r.clients, r.repeat) for r in kept}
        for repeat in range(1, args.repeats + 1):
            for ending in endings:
                for target in targets:
                    for load in loads:
                        record = bookstore_fields(target, load, args.scale, args.seconds, ending)
                        if (record.target, load.name, load.clients, repeat) not in measured:
                            keep(replace(record, repeat=repeat, problem=f"not measured: {start.reason}"))
    failures = sorted({f"{r.target}/{r.load}" for r in kept if not r.ok})
    renderer.render(results.out, results.finish())
    return results.say(failures, "results.json, results.md, charts, index.html")


if __name__ == "__main__":
    sys.exit(main())
