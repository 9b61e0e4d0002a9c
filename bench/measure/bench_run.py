"""The machinery every closed-loop mode shares (make bench, sweep, overload, map): one scenario started, and each of
its targets verified, warmed up and measured under its loads while the server's processes are sampled, into one
BenchRecord per target and load.

A mode declares its targets and loads and calls run_scenario(); it never runs a load generator itself."""

from __future__ import annotations

import resource
from collections.abc import Iterator
from dataclasses import asdict, replace
from typing import Any

from bench.containers import roles
from bench.containers.compose import SUPPORTING_SERVICES, RunningScenario
from bench.containers.sampler import EngineSampler, Sampler, alive, docker_proxy_pids, this_network
from bench.containers.scenarios import Target
from bench.measure.bench_record import BenchRecord, Measurement, unmeasured_record
from bench.measure.client import Client, Load, query, run_loadgen, verify, warm_up
from bench.measure.resultset import Progress
from bench.measure.scenario_start import ScenarioStart
from bench.measure.server_facts import app_settings, cpu_ms_per_unit, idle_threads, server_command
from bench.models.ceiling import efficiency


def measure(record: BenchRecord, running: RunningScenario) -> Measurement:
    """The load generator's figures and the server's usage during the load, or the problem that spoiled them."""
    target, load, client = record.target, record.load, record.client
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
    usage: dict[str, Any] = {"not_sampled": sampler.problem} if sampler.problem else asdict(sampler.usage)
    usage["sampled_on"] = sampler.sampled_on
    if client.place == "host" and "cpu_seconds_others" in usage:
        spent = loadgen_after.ru_utime + loadgen_after.ru_stime - loadgen_before.ru_utime - loadgen_before.ru_stime
        usage["cpu_seconds_others"][client.loadgen.name] = round(spent, 2)
    measured = Measurement(" ".join(command), usage)
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
        efficiency=round(efficiency(result.rps, record.ceiling_rps), 3), p50_ms=result.p50_ms, p99_ms=result.p99_ms,
        failed=result.failed, non2xx=result.non2xx, problem=problem,
    )  # fmt: skip


def run_scenario(
    scenario: str,
    runs: list[tuple[Target, Load]],
    client: Client,
    packages: dict[str, list[str]],
    progress: Progress,
    overload: bool = False,
    environment: dict[str, str] | None = None,
    placed: roles.Roles = roles.NO_ROLES,
) -> Iterator[BenchRecord]:
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
        unit_ms: dict[str, float] = {}
        while runs:
            target, load = runs[0]
            label = f"{scenario} / {target.name}"
            if load.cpu and target.service not in unit_ms:
                unit_ms[target.service] = cpu_ms_per_unit(running, target.service)
            record = unmeasured_record(target, load, client, unit_ms.get(target.service) if load.cpu else None)
            record.app_settings = app_settings(running, target.service)
            record.server_command = server_command(running, target.service)
            # Before any request: what the server holds when nothing happens.
            record.threads_idle = idle_threads(running, target.service)
            progress.show(label, "verifying")
            record.problem = verify(target, load.delay, load.cpu)
            record.verified = record.problem is None
            if record.verified:
                if not overload:  # overload is a sudden flood: no warm-up
                    warm_up(target, running, client, load.c)
                tool = client.loadgen.name
                progress.show(label, f"loading: {tool} -n {load.n} -c {load.c}, {query(load.delay, load.cpu)}")
                before = roles.probe(placed)
                record.measurement = measure(record, running)
                record.problem = record.measurement.problem
                record.cpu_probe = roles.steadiness(before, roles.probe(placed))
            if overload and record.verified and record.problem:
                # The first failing concurrency is the finding; what matters next is that the server lives.
                progress.show(label, "overloaded: does it still answer?")
                record.survived = verify(target, load.delay) is None
                left = [other for t, other in runs if t == target]
                progress.done += len(left) - 1
                runs = [run for run in runs if run[0] != target]
            else:
                runs = runs[1:]
            yield record
    if start.problem:
        # A scenario that does not start fails each of its targets left, and the run goes on with the next.
        for target, load in runs:
            record = unmeasured_record(target, load, client)
            record.problem = start.problem
            yield record
