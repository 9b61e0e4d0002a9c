"""`make map`: where each way of serving wins. A few targets under a grid of loads, I/O delay x CPU units x
clients, each cell verified and measured as `make bench` measures (bench/modes/bench/run.py: same records, same JSON),
then for each cell the winner and by how much, from OUT/results.json alone.

Every figure compares targets within this one run: machines here differ by up to 2x from one session to
the next, so a cell's winner is meaningful, its requests per second are not.

Each cell sends about SECONDS_PER_CELL seconds of requests at the cell's ceiling (at least one request per
client, at most MAX_REQUESTS): the ceiling counts a CPU unit as 1 ms, the nominal cost (flask_app/cpu_work.py);
the records keep what a unit measured in each image.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

from bench.bench_run.measure import run_scenario
from bench.bench_run.record import RunFacts
from bench.containers.scenarios import ConfiguredTarget, Target
from bench.measure.client import Load, choose_client
from bench.measure.resultset import Progress, ResultSet
from bench.models.ceiling import cpu_bound_rps
from bench.modes.map import render as renderer
from bench.options import Option, Options

DELAYS = (0.02, 0.5)  # seconds of I/O wait: a quick database query, a slow API
CPUS = (0, 2, 10)  # units of about 1 ms of CPU each: none, a small template, a heavy serialisation
CLIENTS = (10, 500)  # fewer clients than any server has threads, and more than the sync ones have
SECONDS_PER_CELL = 4
MAX_REQUESTS = 3000
NOMINAL_UNIT_SECONDS = 0.001


# The tutorial's sync and gevent servers, and the 2026 ones where they exist. As many gevent processes as the
# machine has cores, once with gunicorn and once with uWSGI (its default here): with CPU work, one gevent
# process can use only one core.
TARGETS = (
    ConfiguredTarget("sync-gunicorn", "gunicorn-sync"),
    ConfiguredTarget("async-gevent-gunicorn", "gunicorn-gevent"),
    ConfiguredTarget("async-gevent-gunicorn", "gunicorn-gevent", {"WORKERS": "2"}),
    ConfiguredTarget("async-gevent-uwsgi", "uwsgi-gevent"),
    ConfiguredTarget("sync-granian", "granian-sync"),
    ConfiguredTarget("async-quart", "quart-uvicorn"),
)
BY_LABEL = {target.label: target for target in TARGETS}


def requests_for(target: Target, delay: float, cpu: int, clients: int, cores: int) -> int:
    """About SECONDS_PER_CELL seconds at the cell's ceiling; every client sends at least one request."""
    cpu_seconds = cpu * NOMINAL_UNIT_SECONDS
    at_once = min(clients, target.concurrency or clients)
    ceiling = min(at_once / (delay + cpu_seconds), cpu_bound_rps(cpu_seconds, target.workers, cores))
    return max(clients, min(MAX_REQUESTS, round(ceiling * SECONDS_PER_CELL)))


def numbers(kind: Callable[[str], float]) -> Callable[[str], list[float]]:
    return lambda text: [kind(value) for value in text.replace(",", " ").split()]


OPTIONS = Options(
    "map",
    "python -m bench.modes.map",
    (
        Option.some_of("--targets", "TARGETS", BY_LABEL, "TARGET"),
        Option.out("-map"),
        Option("--delays", "DELAYS", "seconds of I/O per request", {"type": numbers(float), "default": list(DELAYS)}),
        Option("--cpus", "CPUS", "CPU units per request", {"type": numbers(int), "default": list(CPUS)}),
        Option("--clients", "CLIENTS", "clients at once", {"type": numbers(int), "default": list(CLIENTS)}),
    ),
)


def main(argv: list[str] | None = None) -> int:
    arguments = OPTIONS.arguments(argv)
    args = OPTIONS.parser(__doc__).parse_args(arguments)
    results = ResultSet("python -m bench.modes.map", "map", arguments, args.out, suffix="-map")
    client = choose_client("auto")
    results.metadata |= {"delays": args.delays, "cpus": args.cpus, "clients": args.clients}
    cores = results.metadata["cpu_count"] or 1
    chosen = [BY_LABEL[label] for label in args.targets]
    cells = [(delay, cpu, c) for delay in args.delays for cpu in args.cpus for c in args.clients]
    progress = Progress(len(chosen) * len(cells))
    failures = []
    for mapped in chosen:
        target = mapped.resolve()
        runs = [(target, Load(requests_for(target, d, cpu, c, cores), c, d, cpu)) for d, cpu, c in cells]
        packages = results.metadata["packages"]
        run = RunFacts(label=mapped.label, settings=mapped.settings)
        for record in run_scenario(mapped.scenario, runs, run, client, packages, progress, environment=mapped.settings):
            results.add(record)
            progress.done += 1
            print(f"    {record.rps or '-'} requests/s, {'ok' if record.ok else record.problem}", flush=True)
            failures += [] if record.ok else [mapped.label]
    renderer.render(results.out, results.finish())  # results.md, the charts and index.html
    print(f"\nresults in {results.out}: results.json, results.md, index.html and the two charts")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
