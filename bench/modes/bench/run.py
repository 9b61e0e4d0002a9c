"""`make bench`, `make sweep` and `make overload`: each target started fresh, verified, warmed up, loaded while its
processes are sampled, and torn down (bench/bench_run/measure.py); one record per target and load in OUT/results.json,
rendered to Markdown, charts and index.html from that file alone.

- bench: each target at the tutorial's load (2000 requests from 200 clients, or 10 from 5 for the one-at-a-time
  servers), `--also` more clients, `--repeat` times round the whole matrix; slow_api alone, first, at every load:
  the same-run reference each target is a share of.
- sweep: each concurrent target at these client counts, 5 x as many requests each.
- overload: each concurrent target at these client counts, one request each, until a request fails; then whether
  the server still answers.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass, replace

from bench.bench_run import render as renderer
from bench.bench_run.measure import compared_to_reference, load_of, run_scenario
from bench.bench_run.record import BenchResult, RunFacts
from bench.containers import roles
from bench.containers.images import cold_build
from bench.containers.scenarios import LOADS, REFERENCE, SCENARIOS, Target, load_targets
from bench.loadgen.closed_loop import LOADGENS
from bench.measure.client import Client, Load, choose_client
from bench.measure.resultset import Progress, ResultSet
from bench.options import Option, Options

SWEEP_CONCURRENCIES = (10, 50, 200, 500, 1000)
OVERLOAD_LEVELS = (1000, 2000, 3000, 5000, 7500, 10000, 15000)


def concurrencies(text: str) -> list[int]:
    return sorted(int(c) for c in text.replace(",", " ").split())


def settings(text: str) -> dict[str, str]:
    pairs = [pair.split("=", 1) for pair in text.split()]
    if not pairs or any(len(pair) != 2 or not pair[0].isupper() for pair in pairs):
        raise argparse.ArgumentTypeError(f"settings are NAME=VALUE pairs, such as WORKER_CONNECTIONS=1000: {text!r}")
    return dict(pairs)


def loads_of(targets: list[Target], args: argparse.Namespace) -> dict[str, list[Load]]:
    """Each target's loads, in the order they run."""
    if args.sweep:
        return {t.name: [Load(args.requests or c * 5, c, args.delay, args.cpu) for c in args.sweep] for t in targets}
    if args.overload:
        return {t.name: [Load(c, c, args.delay, args.cpu) for c in args.overload] for t in targets}
    # --also: the same target in the same run at more clients (5 x as many requests), so the two compare.
    return {
        t.name: [Load(args.requests or LOADS[t.load][0], args.concurrency or LOADS[t.load][1], args.delay, args.cpu)]
        + ([Load(c * 5, c, args.delay, args.cpu) for c in args.also] if t.load == "full" else [])
        for t in targets
    }


@dataclass(frozen=True)
class Start:
    """A scenario started once for some of the targets: its name, and the settings put in its environment (none:
    as its file says)."""

    scenario: str
    settings: tuple[tuple[str, str], ...] = ()


def measure_all(
    starts: dict[str, Start], loads: dict[str, list[Load]], targets: list[Target], repeat: int, client: Client,
    results: ResultSet, progress: Progress, placed: roles.Roles, overload: bool = False,
) -> list[BenchResult]:  # fmt: skip
    """Every target at each of its loads, one start of its scenario per Start, in the order the targets come."""
    records = []
    for start in dict.fromkeys(starts[t.name] for t in targets):
        runs = [(t, load) for t in targets if starts[t.name] == start for load in loads[t.name]]
        packages, environment = results.metadata["packages"], dict(start.settings)
        run = RunFacts(repeat=repeat, settings=environment or None, roles=results.metadata["roles"])
        for record in run_scenario(
            start.scenario, runs, run, client, packages, progress, overload, environment, placed
        ):
            records.append(record)
            results.add(record)
            progress.done += 1
            verdict = "ok" if record.ok else f"NOT OK: {record.problem}"
            print(f"    {record.rps or '-'} requests/s, {verdict}", flush=True)
    return records


def rerun_unsteady(
    records: list[BenchResult], attempts: int, starts: dict[str, Start], targets: list[Target], client: Client,
    results: ResultSet, progress: Progress, placed: roles.Roles,
) -> list[BenchResult]:  # fmt: skip
    """The records, with each measurement during which the CPU's speed moved (bench/containers/roles.py, steadiness)
    made again, up to `attempts` times: every attempt is one more round (its own repeat number) of slow_api alone at the
    loads concerned, then the unsteady targets, so each re-run has a reference of its own moment. The unsteady record
    stays in the set, `superseded`; the tables count the re-run in its place."""
    by_name = {target.name: target for target in targets}
    for attempt in range(attempts):
        unsteady = [r for r in records if r.unsteady and not r.superseded and r.scenario != REFERENCE]
        if not unsteady:
            break
        print(f"re-running {len(unsteady)} unsteady measurements (attempt {attempt + 1} of {attempts})", flush=True)
        (reference,) = map(placed.addressed, load_targets(REFERENCE))
        loads = {reference.name: list(dict.fromkeys(replace(load_of(r), cpu=0) for r in unsteady))}
        for record in unsteady:
            loads.setdefault(record.target, []).append(load_of(record))
        again = [reference, *(by_name[name] for name in dict.fromkeys(r.target for r in unsteady))]
        progress.total += sum(len(target_loads) for target_loads in loads.values())
        repeat = max(r.repeat or 0 for r in records) + 1
        superseded, rerun = set(), []  # the unsteady records made again (by identity: two may be equal)
        for record in measure_all(starts, loads, again, repeat, client, results, progress, placed):
            if record.scenario == REFERENCE:  # the re-runs' yardstick, not one of the reference's runs
                rerun.append(replace(record, rerun_reference=True))
                continue
            replaced = next(r for r in unsteady if (r.target, load_of(r)) == (record.target, load_of(record)))
            superseded.add(id(replaced))
            rerun.append(replace(record, rerun_of=replaced.repeat))
        records = [replace(r, superseded=True) if id(r) in superseded else r for r in records] + rerun
        results.update(records)
    return records


# Each role on a Docker engine of its own, and on cores of its own (docs/several-machines.md); unset: all here.
ROLE_OPTIONS = (
    *(
        Option(f"--{role}-host", f"{role.upper()}_HOST", f"the {role}'s Docker engine: ssh://, tcp://, unix:// or a"
               " context")
        for role in roles.ROLES
    ),
    Option("--bind", "BIND", "an address of the server host to publish its ports on (default 127.0.0.1)"),
    Option("--database-bind", "DATABASE_BIND", "an address of the database host, where the server reaches it"),
    *(
        Option(f"--cpuset-{role}", f"CPUSET_{role.upper()}", f"cores for the {role}'s containers, e.g. 0 or 1-3")
        for role in roles.ROLES
    ),
)  # fmt: skip
# Each target's options in the order its recipe wrote them when it had a clause per option: the set records the
# same command line. What the three share first, then each its own.
SHARED = (
    Option.some_of("--scenarios", "SCENARIOS", SCENARIOS, "SCENARIO"),
    Option.out(""),
    Option("--repeat", "REPEAT", "run the whole matrix this many times, interleaved", {"type": int, "default": 1}),
    Option(
        "--rerun-unsteady", "RERUN",
        "bench: measure a run again, at most K times, while the CPU probe says the machine's speed moved",
        {"type": int, "default": 0, "metavar": "K"},
    ),
    Option(
        "--loadgen", "LOADGEN", "ab (the tutorial's), hey, wrk, or h2load (HTTP/2)",
        {"choices": LOADGENS, "default": "ab"},
    ),
    Option("--cpu", "CPU", "units of CPU work per request, about 1 ms each", {"type": int, "default": 0}),
    *ROLE_OPTIONS,
)  # fmt: skip
CLIENT = Option(
    "--client", "CLIENT", "where the load generator runs: this machine where it has it, or a container",
    {"choices": ("auto", "host", "container"), "default": "auto"},
).always("auto")  # fmt: skip
DELAY = Option("--delay", "DELAY", "seconds each request waits on slow_api", {"type": float, "default": 1.0})
LEVELS = "levels"  # --sweep and --overload exclude each other

OPTIONS = Options(
    "bench",
    "python -m bench.modes.bench",
    (
        *SHARED,
        CLIENT,
        Option("--cold-build", None, "first a no-cache build of every app image", {"action": "store_true"}).always(),
        Option("-n", "N", "requests per target (default: the tutorial's)", {"type": int}, aliases=("--requests",)),
        Option("-c", "C", "ab's clients (default: the tutorial's)", {"type": int}, aliases=("--concurrency",)),
        DELAY,
        Option(
            "--also", "ALSO", "bench: also these client counts for each concurrent target",
            {"type": concurrencies, "default": []},
        ),
        Option(
            "--variant", "VARIANT",
            "bench: each scenario also started with these settings (e.g. WORKER_CONNECTIONS=1000), in the same run",
            {"type": settings, "metavar": "NAME=VALUE ..."},
        ),
        Option("--no-reference", None, "leave out slow_api alone, the same-run reference", {"action": "store_true"}),
    ),
    others=(
        Options(
            "sweep",
            "python -m bench.modes.bench sweep",
            (
                *SHARED,
                CLIENT,
                Option(
                    "--sweep", "CONCURRENCIES", "these client counts, 5 x as many requests each",
                    {"type": concurrencies}, LEVELS,
                ).always(" ".join(map(str, SWEEP_CONCURRENCIES))),
                DELAY,
            ),
        ),
        Options(
            "overload",
            "python -m bench.modes.bench overload",
            (
                *SHARED,
                # ab from a container by default: past a few thousand clients, docker-proxy on the published port
                # gives out first.
                replace(CLIENT, help="auto is a container here: past a few thousand clients, docker-proxy on the"
                        " published port gives out first", instead={"auto": "container"}),
                Option(
                    "--overload", "LEVELS", "these client counts, one request each, up to a failure",
                    {"type": concurrencies}, LEVELS,
                ).always(" ".join(map(str, OVERLOAD_LEVELS))),
                DELAY,
            ),
        ),
    ),
)  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    arguments = OPTIONS.arguments(argv)
    args = OPTIONS.parser(__doc__, argparse.RawDescriptionHelpFormatter).parse_args(arguments)
    mode = "sweep" if args.sweep else "overload" if args.overload else "bench"
    results = ResultSet("python -m bench.modes.bench", mode, arguments, args.out)
    placed = roles.from_arguments(args)
    # With roles, the load generator runs in a container on the client's engine, on its cores.
    client = choose_client("container" if placed.active else args.client, args.loadgen)
    if placed.active:
        roles.copy_images([client.loadgen.image], placed.client)

    levels = args.sweep or args.overload
    # Each scenario as its file says, then, with --variant, again with those settings: one run compares the two.
    starts: dict[str, Start] = {}
    targets = []
    for environment in [{}, *([args.variant] if args.variant else [])]:
        for scenario in args.scenarios:
            for target in load_targets(scenario, environment):
                if environment:
                    label = " ".join(f"{name}={value}" for name, value in environment.items())
                    target = replace(target, name=f"{target.name} {label}")
                if not levels or target.load == "full":
                    targets.append(placed.addressed(target))
                    starts[target.name] = Start(scenario, tuple(environment.items()))
    loads = loads_of(targets, args)
    if not client.loadgen.reference:
        print(f"no reference: slow_api speaks HTTP/1.1 only, and {client.loadgen.name} does not", flush=True)
    if not args.overload and not args.no_reference and client.loadgen.reference:
        # slow_api alone, first, at every load the targets get (it has no CPU work to do): the yardstick this
        # run's machine sets.
        (reference,) = map(placed.addressed, load_targets(REFERENCE))
        every_load = (replace(load, cpu=0) for target_loads in loads.values() for load in target_loads)
        loads[reference.name] = list(dict.fromkeys(every_load))
        targets.insert(0, reference)
        starts[reference.name] = Start(REFERENCE)
    results.metadata["repeat"] = args.repeat
    # Where each role ran: its engine and its machine's cores, kernel and CPU model (all the local one by default).
    results.metadata["roles"] = roles.describe_roles(placed)
    if args.cold_build:
        print("building every app image without cache", flush=True)
        results.metadata["images"] = cold_build()
    progress = Progress(args.repeat * sum(len(target_loads) for target_loads in loads.values()))
    records: list[BenchResult] = []
    # Repeats go round the whole matrix (a, b, c, a, b, c), so that the machine's drift hits every target alike.
    for repeat in range(args.repeat):
        records += measure_all(starts, loads, targets, repeat, client, results, progress, placed, bool(args.overload))
    if not args.overload:  # overload has no reference, and its failures are the finding
        records = rerun_unsteady(records, args.rerun_unsteady, starts, targets, client, results, progress, placed)
    records = compared_to_reference(records)
    results.update(records)
    failures = [r.target for r in records if not r.ok]
    if args.overload:
        # Overload looks for failures: only a server that was unusable before, or did not survive, is one.
        failures = [r.target for r in records if not r.verified or r.survived is False]
    renderer.render(results.out, results.finish())
    return results.say(failures, "results.json, results.md, charts")


if __name__ == "__main__":
    sys.exit(main())
