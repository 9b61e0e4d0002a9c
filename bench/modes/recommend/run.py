"""`make recommend`: the run behind the README's recommendation. Each way it weighs, at one process and at one per
core, under the loads where the choice matters (200, 1000 and 5000 clients with no CPU work, 200 and 1000 with a few
milliseconds of it); the one-process ways again with the app on one core of its own, the load generator and
slow_api on the others; slow_api alone first, under each placement and load, the same-run reference. Each target
is verified and measured as `make bench` measures it (bench/bench_run/measure.py: same records), and the repeats
go round the whole matrix, so that the machine's drift hits every way alike.

From OUT/results.json alone the page (bench/modes/recommend/render.py) gives each way's share of slow_api alone, what
a second process buys, what one process tops out at on one core with its CPU per request, and the bounds a machine
of more cores puts on each way (bench/models/scaling.py), beside how close this machine came to its own.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field

from bench.bench_run.measure import compared_to_reference, run_scenario
from bench.bench_run.record import BenchResult, RunFacts
from bench.containers import roles
from bench.containers.scenarios import REFERENCE, ConfiguredTarget, load_targets
from bench.measure.client import Client, Load, choose_client
from bench.measure.resultset import Progress, ResultSet
from bench.modes.recommend import render as renderer
from bench.options import Option, Options

CPU_UNITS = 3  # "a few milliseconds": about 1 ms each (flask_app/cpu_work.py), measured in each image
CLIENTS = (200, 1000, 5000)
CPU_CLIENTS = (200, 1000)  # with CPU_UNITS of work a request
ONE_CORE_CLIENTS = (1000,)  # on one core: where one process runs out of CPU, with and without the work
# ab's -n at each client count: the tutorial's 2000 at 200, 5 a client at 1000 as `make bench ALSO=` sends, 2 a
# client above, where a way that holds 200 at once already needs 50 s.
REQUESTS = {200: 2000, 1000: 5000}
TOTAL_AT_ONCE = 200  # what the tutorial's thread servers hold, shared out among processes when one runs per core


@dataclass(frozen=True)
class Matrix:
    """The loads, as the command line sets them (the defaults above, smaller in the tests)."""

    clients: tuple[int, ...] = CLIENTS
    cpu_clients: tuple[int, ...] = CPU_CLIENTS
    one_core_clients: tuple[int, ...] = ONE_CORE_CLIENTS
    delay: float = 1.0  # the tutorial's slow_api delay
    cpu_units: int = CPU_UNITS

    def load(self, clients: int, cpu: int = 0) -> Load:
        return Load(REQUESTS.get(clients, 2 * clients), clients, self.delay, cpu)

    def every_load(self) -> tuple[Load, ...]:
        return (*(self.load(c) for c in self.clients), *(self.load(c, self.cpu_units) for c in self.cpu_clients))

    def readme_loads(self) -> tuple[Load, ...]:
        """The README's two loads: where the ways new in 2025-2026 are compared with their older neighbours."""
        return tuple(self.load(c) for c in self.clients[:2])

    def one_core_loads(self) -> tuple[Load, ...]:
        return (
            *(self.load(c) for c in self.one_core_clients),
            *(self.load(c, self.cpu_units) for c in self.one_core_clients),
        )


@dataclass(frozen=True)
class Way:
    """A way of serving at one process (as its file says, or with `one`), and, where `per_core` says how, with one
    process per core; `{cores}` and `{threads}` (TOTAL_AT_ONCE / cores) are filled in on the machine that runs."""

    scenario: str
    target: str
    one: dict[str, str] = field(default_factory=dict)
    per_core: dict[str, str] | None = None
    readme_loads_only: bool = False

    def configured(self, cores: int) -> list[tuple[ConfiguredTarget, bool]]:
        """Its configurations on `cores` cores, each with whether it runs one process per core."""
        threads = str(max(1, TOTAL_AT_ONCE // cores))
        settings = [(self.one, False)] + ([(self.per_core, True)] if self.per_core and cores > 1 else [])
        return [
            (
                ConfiguredTarget(
                    self.scenario, self.target, {k: v.format(cores=cores, threads=threads) for k, v in s.items()}
                ),
                per_core,
            )
            for s, per_core in settings
        ]


PER_CORE = {"WORKERS": "{cores}"}
WAYS = (
    Way("async-gevent-gunicorn", "gunicorn-gevent", per_core=PER_CORE),
    Way("nginx-gunicorn", "nginx-gunicorn-gevent", per_core=PER_CORE),
    # Its file runs one process per core on this 2-core machine; one process is asked for.
    Way("async-gevent-uwsgi", "uwsgi-gevent", one={"WORKERS": "1"}, per_core=PER_CORE),
    # The tutorial's 4 x 50 threads, and as many processes as cores sharing its 200 threads.
    Way("sync-gunicorn", "gunicorn-sync", per_core={"WORKERS": "{cores}", "THREADS": "{threads}"}),
    Way("sync-granian", "granian-sync", per_core={"WORKERS": "{cores}", "BLOCKING_THREADS": "{threads}"}),
    Way("async-quart", "quart-uvicorn"),
    # The 2025-2026 options, beside their older neighbours at the README's loads.
    Way("nginx-gunicorn-uwsgi", "nginx-gunicorn-uwsgi-gevent", readme_loads_only=True),
    Way("gunicorn-http2", "gunicorn-http2-gevent", readme_loads_only=True),
    Way("sync-mod-wsgi-subinterpreters", "mod-wsgi-subinterpreters", readme_loads_only=True),
)
BY_TARGET = {way.target: way for way in WAYS}


@dataclass(frozen=True)
class Placement:
    """Where the app runs: on every core beside the load generator and slow_api, or on one core of its own."""

    name: str
    roles: roles.Roles


def placements(cores: int) -> list[Placement]:
    every = Placement("every core", roles.Roles())
    if cores < 2:
        return [every]
    others = "0" if cores == 2 else f"0-{cores - 2}"
    own = roles.Roles(cpusets={"server": str(cores - 1), "client": others, "database": others})
    return [every, Placement("one core", own)]


@dataclass(frozen=True)
class Planned:
    """One start of a scenario under a placement, and the loads its target gets there."""

    configured: ConfiguredTarget
    placement: Placement
    loads: tuple[Load, ...]
    per_core: bool = False


def plan(ways: list[Way], cores: int, matrix: Matrix) -> list[Planned]:
    """slow_api alone first under each placement, at every load without CPU work that its ways get; then each way,
    one process and one per core, under every placement, one process only on one core."""
    planned = []
    for placement in placements(cores):
        one_core = placement.name == "one core"
        runs = [
            Planned(configured, placement, loads, per_core)
            for way in ways
            if not (one_core and way.readme_loads_only)
            for loads in [matrix.one_core_loads() if one_core else matrix.readme_loads() if way.readme_loads_only
                          else matrix.every_load()]
            for configured, per_core in way.configured(cores)[: 1 if one_core else None]
        ]  # fmt: skip
        wanted = {(load.n, load.c) for run in runs for load in run.loads}
        reference_loads = tuple(Load(n, c, matrix.delay, 0) for n, c in sorted(wanted, key=lambda pair: pair[1]))
        (reference,) = load_targets(REFERENCE)
        planned += [Planned(ConfiguredTarget(REFERENCE, reference.name), placement, reference_loads), *runs]
    return planned


def measure(planned: Planned, repeat: int, client: Client, results: ResultSet, progress: Progress) -> list[BenchResult]:
    configured, placement = planned.configured, planned.placement
    target = placement.roles.addressed(configured.resolve())
    runs = [(target, load) for load in planned.loads]
    packages = results.metadata["packages"]
    records = []
    environment = configured.settings or None
    run = RunFacts(
        repeat=repeat, label=configured.label, settings=configured.settings, placement=placement.name,
        per_core=planned.per_core, cpusets=placement.roles.cpusets or None,
    )  # fmt: skip
    for record in run_scenario(
        configured.scenario, runs, run, client, packages, progress, False, environment, placement.roles
    ):
        results.add(record)
        records.append(record)
        progress.done += 1
        print(f"    {record.rps or '-'} requests/s, {'ok' if record.ok else record.problem}", flush=True)
    return records


def numbers(text: str) -> tuple[int, ...]:
    return tuple(int(value) for value in text.replace(",", " ").split())


OPTIONS = Options(
    "recommend",
    "python -m bench.modes.recommend",
    (
        Option.some_of("--ways", "WAYS", BY_TARGET, "TARGET"),
        Option("--repeat", "REPEAT", "rounds of the whole matrix, interleaved", {"type": int, "default": 3}),
        Option("--clients", "CLIENTS", "client counts, no CPU work", {"type": numbers, "default": CLIENTS}),
        Option(
            "--cpu-clients",
            "CPU_CLIENTS",
            f"with {CPU_UNITS} CPU units a request",
            {"type": numbers, "default": CPU_CLIENTS},
        ),
        Option(
            "--one-core-clients",
            "ONE_CORE_CLIENTS",
            "the app on one core",
            {"type": numbers, "default": ONE_CORE_CLIENTS},
        ),
        Option.out("-recommend"),
        Option("--delay", None, "seconds each request waits on slow_api", {"type": float, "default": 1.0}),
    ),
)


def main(argv: list[str] | None = None) -> int:
    arguments = OPTIONS.arguments(argv)
    args = OPTIONS.parser(__doc__).parse_args(arguments)
    results = ResultSet("python -m bench.modes.recommend", "recommend", arguments, args.out, suffix="-recommend")
    cores = results.metadata["cpu_count"] or 1
    # In a container, on the scenario's network, under both placements alike; pinned with the client's cores.
    client = choose_client("container")
    matrix = Matrix(args.clients, args.cpu_clients, args.one_core_clients, args.delay)
    planned = plan([BY_TARGET[name] for name in args.ways], cores, matrix)
    results.metadata |= {"repeat": args.repeat, "cpu_units": matrix.cpu_units, "placements": {
        p.placement.name: p.placement.roles.cpusets for p in planned
    }}  # fmt: skip
    progress = Progress(args.repeat * sum(len(p.loads) for p in planned))
    records = []
    for repeat in range(args.repeat):
        for each in planned:
            records += measure(each, repeat, client, results, progress)
    records = compared_to_reference(records)
    results.update(records)
    renderer.render(results.out, results.finish())
    failures = sorted({r.label or r.target for r in records if not r.ok})
    return results.say(failures, "results.json, results.md, index.html")


if __name__ == "__main__":
    sys.exit(main())
