"""The machinery every closed-loop mode shares (make bench, sweep, overload, map, recommend): one scenario started, and
each of its targets measured under its loads (bench/measure/bench_record.py), one BenchResult per target and load.

A mode declares its targets and loads and calls run_scenario(); it never runs a load generator itself."""

from __future__ import annotations

from collections.abc import Iterator

from bench.containers import roles
from bench.containers.compose import RunningScenario
from bench.containers.scenarios import Target
from bench.measure.bench_record import checked, measured_record, unmeasured_record
from bench.measure.client import Client, Load
from bench.measure.resultset import Progress
from bench.measure.scenario_start import ScenarioStart
from bench.results.bench import BenchResult


def run_scenario(
    scenario: str,
    runs: list[tuple[Target, Load]],
    client: Client,
    packages: dict[str, list[str]],
    progress: Progress,
    overload: bool = False,
    environment: dict[str, str] | None = None,
    placed: roles.Roles = roles.NO_ROLES,
) -> Iterator[BenchResult]:
    """Start one scenario (with these settings in its environment, on the engines and cores `placed` gives its
    roles) and yield a record for each (target, load) of `runs`, in order; the images' packages go into
    `packages`. Overload: a target's loads stop at the first that fails."""
    progress.show(scenario, "building and starting")
    services = [target.service for target, _ in runs]
    with ScenarioStart(packages) as start:
        running = start.up(
            roles.RolesScenario(scenario, placed, services, environment=environment)
            if placed.active
            else RunningScenario(scenario, environment=environment)
        )
        unit_costs: dict[str, float] = {}  # what a ?cpu= unit costs in each service's image, measured once
        while runs:
            target, load = runs[0]
            record = measured_record(running, target, load, client, progress, placed, overload, unit_costs)
            if record.survived is not None:  # overloaded: the target's larger loads are not run
                left = [other for t, other in runs if t == target]
                progress.done += len(left) - 1
                runs = [run for run in runs if run[0] != target]
            else:
                runs = runs[1:]
            yield record
    if start.problem:
        # A scenario that does not start fails each of its targets left, and the run goes on with the next.
        for target, load in runs:
            yield checked(unmeasured_record(target, load, client), start.problem)
