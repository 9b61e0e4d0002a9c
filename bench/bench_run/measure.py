"""One scenario's targets measured the way make bench measures them (make sweep, overload, map and recommend too):
the scenario started once (run_scenario), then each target under each of its loads measured into one BenchResult
(record.py), built in one place (measured_record): its fixed part first (what was loaded and how, what the mode says
of its run, the best a perfect server could score), the server at rest, then what was measured (Measurement: the load
generator's figures, the server's processes sampled meanwhile) once the target answered right. Once a run's records
are in, each one's throughput as a share of slow_api alone under the same load (compared_to_reference).

A mode declares its targets, loads and run and calls run_scenario(); it never runs a load generator itself."""

from __future__ import annotations

import os
import resource
from collections.abc import Iterator
from dataclasses import replace

from bench.bench_run.record import BenchResult, Measurement, RunFacts
from bench.containers import roles
from bench.containers.compose import SUPPORTING_SERVICES, RunningScenario
from bench.containers.sampler import EngineSampler, Sampler, alive, docker_proxy_pids, this_network
from bench.containers.scenarios import REFERENCE, Target
from bench.measure.client import Client, Load, query, run_loadgen, verify, warm_up
from bench.measure.resultset import Progress
from bench.measure.scenario_start import ScenarioStart
from bench.measure.server_facts import at_rest
from bench.models.ceiling import cpu_bound_rps, efficiency, naive_ceiling_rps
from bench.results.records import CpuProbe, taken_in


def run_scenario(
    scenario: str,
    runs: list[tuple[Target, Load]],
    run_facts: RunFacts,
    client: Client,
    packages: dict[str, list[str]],
    progress: Progress,
    overload: bool = False,
    environment: dict[str, str] | None = None,
    placed: roles.Roles = roles.NO_ROLES,
) -> Iterator[BenchResult]:
    """Start one scenario (with these settings in its environment, on the engines and cores `placed` gives its
    roles) and yield a record for each (target, load) of `runs`, in order, each carrying what the mode says of its
    run (`run_facts`); the images' packages go into `packages`. Overload: a target's loads stop at the first that
    fails."""
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
            record = measured_record(running, target, load, client, progress, placed, overload, unit_costs, run_facts)
            if record.survived is not None:  # overloaded: the target's larger loads are not run
                left = [other for t, other in runs if t == target]
                progress.done += len(left) - 1
                runs = [pair for pair in runs if pair[0] != target]
            else:
                runs = runs[1:]
            yield record
    if start.problem:
        # A scenario that does not start fails each of its targets left, and the run goes on with the next.
        for target, load in runs:
            yield checked(unmeasured_record(target, load, client, run_facts), start.problem)


def unmeasured_record(
    target: Target, load: Load, client: Client, run_facts: RunFacts, cpu_ms_per_unit: float | None = None
) -> BenchResult:
    """The record before any measurement, its fixed part: what was loaded, how, what the mode says of its run, and
    the best a perfect server could score.

    With CPU work, a request holds its place for the delay plus its CPU time, and the CPU time alone bounds
    the throughput (bench/models/ceiling.py, cpu_bound_rps). The CPU time is the units times what one unit took in
    the target's own image just before (cpu_ms_per_unit): the server's and Flask's own CPU per request is not
    in it, so with CPU work the ceiling is an upper bound that no server reaches."""
    cpu_seconds = load.cpu * (cpu_ms_per_unit or 0) / 1000
    ceiling = client.loadgen.ceiling_rps(load.n, load.c, load.delay + cpu_seconds, target.concurrency)
    naive = naive_ceiling_rps(load.c, load.delay + cpu_seconds, target.concurrency)
    if cpu_seconds:
        bound = cpu_bound_rps(cpu_seconds, target.workers, os.cpu_count() or 1)
        ceiling, naive = min(ceiling, bound), min(naive, bound)
    return BenchResult(
        **target.record_fields(), n=load.n, c=load.c, delay=load.delay, cpu_units=load.cpu,
        cpu_ms_per_unit=cpu_ms_per_unit, client=client.place, loadgen=client.loadgen.name,
        keepalive=client.loadgen.keepalive, ceiling_rps=round(ceiling, 2), ceiling_naive_rps=round(naive, 2),
        verified=False, ok=False,
    ).with_measured(run_facts)  # fmt: skip


def checked(
    record: BenchResult, problem: str | None, measurement: Measurement | None = None,
    cpu_probe: CpuProbe | None = None, survived: bool | None = None,
) -> BenchResult:  # fmt: skip
    """The record once its target was verified (`problem` None) or not, and measured where it was."""
    verified = problem is None
    if measurement is not None:
        record, problem = record.with_measured(measurement), measurement.problem
    return replace(record, verified=verified, problem=problem, cpu_probe=cpu_probe, survived=survived).judged()


def measured_record(
    running: RunningScenario, target: Target, load: Load, client: Client, progress: Progress, placed: roles.Roles,
    overload: bool, unit_costs: dict[str, float], run_facts: RunFacts,
) -> BenchResult:  # fmt: skip
    """One target of a started scenario under one load: what its server is at rest, verified, warmed up (not for
    overload, a sudden flood), loaded while its processes are sampled between two CPU probes; overloaded, whether it
    still answers."""
    label = f"{running.scenario} / {target.name}"
    facts = at_rest(running, target.service, unit_costs if load.cpu else None)
    record = unmeasured_record(target, load, client, run_facts, facts.cpu_ms_per_unit)
    record = replace(
        record, app_settings=facts.app_settings, server_command=facts.server_command, threads_idle=facts.threads_idle
    )
    progress.show(label, "verifying")
    problem = verify(target, load.delay, load.cpu)
    if problem is not None:
        return checked(record, problem)
    if not overload:
        warm_up(target, running, client, load.c)
    tool = client.loadgen.name
    progress.show(label, f"loading: {tool} -n {load.n} -c {load.c}, {query(load.delay, load.cpu)}")
    before = roles.probe(placed)
    measurement = measure(target, load, client, record.ceiling_rps, running)
    cpu_probe = roles.steadiness(before, roles.probe(placed))
    survived = None
    if overload and measurement.problem:
        # The first failing concurrency is the finding; what matters next is that the server lives.
        progress.show(label, "overloaded: does it still answer?")
        survived = verify(target, load.delay) is None
    return checked(record, problem, measurement, cpu_probe, survived)


def measure(target: Target, load: Load, client: Client, ceiling_rps: float, running: RunningScenario) -> Measurement:
    """The load generator's figures and the server's usage during the load, or the problem that spoiled them."""
    services = running.container_ids()
    # The sampler reads /proc here where this machine sees the server's processes, or else through the server's
    # engine in a container that sees them (bench/containers/sampler.py: sees_container, EngineSampler).
    server_cli, local = running.docker_cli(target.service), running.sees_processes(target.service)
    near = {
        service for service in services
        if (running.sees_processes(service) if local else running.docker_cli(service) == server_cli)
    }  # fmt: skip
    server_pid = running.main_pid(target.service)
    postgres_pid = running.main_pid("postgres") if "postgres" in near else None
    # Everything else on a request's path on the same machine, whose CPU time is spent on the same cores.
    others = {
        service: [running.main_pid(service)]
        for service in SUPPORTING_SERVICES
        if service in near and service != target.service
    }
    # A client on this machine loads the published port: docker-proxy, on the engine's machine, is on the path; here,
    # the engine's proxies are the ones of the client's 127.0.0.1.
    proxied = client.place == "host"
    if proxied and local:
        others["docker-proxy"] = docker_proxy_pids(this_network())
    loadgen_before = resource.getrusage(resource.RUSAGE_CHILDREN)
    sampler: Sampler | EngineSampler = (
        Sampler(server_pid, postgres_pid, others)
        if local
        else EngineSampler(server_cli, server_pid, postgres_pid, others, docker_proxy=proxied)
    )
    with sampler:
        command, output = run_loadgen(target, running, client, load.n, load.c, load.delay, load.cpu)
    loadgen_after = resource.getrusage(resource.RUSAGE_CHILDREN)
    measured = Measurement(command=" ".join(command), sampled_on=sampler.sampled_on, not_sampled=sampler.problem)
    if not sampler.problem:  # the sampler's Usage, whole (its fields are the record's)
        others_cpu = dict(sampler.usage.cpu_seconds_others)
        if client.place == "host":  # the load generator ran here: its own CPU time is the machine's too
            spent = loadgen_after.ru_utime + loadgen_after.ru_stime - loadgen_before.ru_utime - loadgen_before.ru_stime
            others_cpu[client.loadgen.name] = round(spent, 2)
        measured = replace(taken_in(measured, sampler.usage), cpu_seconds_others=others_cpu)
    # Docker's userland proxy stops for good when accept() fails, e.g. out of file descriptors: from then on
    # no request reaches the server, however well it is doing.
    proxy_died = not all(alive(pid) for pid in others.get("docker-proxy", []))
    proxy_note = "; docker-proxy exited: the published port forwards nothing until restarted" if proxy_died else ""
    try:
        result = client.loadgen.parse(output)
    except ValueError as error:
        return replace(measured, problem=f"{client.loadgen.name} did not finish: {error}{proxy_note}")
    problem = None
    if result.failed or result.non2xx:
        # ab counts failure events (one reset can be a receive error, a length and an exception), not requests.
        kinds = ", ".join(f"{kind} {count}" for kind, count in result.failure_kinds.items())
        problem = f"{client.loadgen.name} counted {result.failed} failures ({kinds}) and {result.non2xx} non-2xx"
        problem += f" answers in {load.n} requests"
    if proxy_died:
        problem = (problem or "no failure") + proxy_note
    return replace(
        measured, rps=result.rps, seconds=result.seconds, complete=result.complete,
        efficiency=round(efficiency(result.rps, ceiling_rps), 3), p50_ms=result.p50_ms, p99_ms=result.p99_ms,
        failed=result.failed, non2xx=result.non2xx, problem=problem,
    )  # fmt: skip


def load_of(record: BenchResult) -> Load:
    return Load(record.n, record.c, record.delay, record.cpu_units)


def compared_to_reference(records: list[BenchResult]) -> list[BenchResult]:
    """Each record, with its throughput as a share of slow_api alone under the same load, client, repeat and placement
    (make recommend's)."""

    # slow_api has no CPU knob: with ?cpu=, the reference is still slow_api alone at the same delay.
    def key(record: BenchResult) -> tuple[int, int, float, str, int | None, str | None]:
        return record.n, record.c, record.delay, record.client, record.repeat, record.placement

    reference = {key(r): r.rps for r in records if r.scenario == REFERENCE and r.ok}
    compared = []
    for record in records:
        reference_rps = reference.get(key(record))
        if reference_rps and record.ok and record.rps is not None:
            record = replace(record, reference_rps=reference_rps, vs_reference=round(record.rps / reference_rps, 3))
        compared.append(record)
    return compared
