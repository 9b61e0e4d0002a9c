"""One round of make bookstore: one load at one number of clients, each target in turn (woken while the others
stay paused, its SQL captured and warmed up the first time, then measured under wrk, bench/modes/bookstore/wrk_load.py),
then the database alone under pgbench for each set of scripts, clients and protocol the targets share
(bench/modes/bookstore/pgbench_replay.py): the round's reference, each record's `vs_database`."""

from __future__ import annotations

import json
import secrets
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path

from bench.containers.compose import RunningScenario, ScenarioError, docker
from bench.containers.postgres import settle
from bench.containers.scenarios import Target
from bench.loadgen import pgbench
from bench.measure import profile
from bench.measure.bookstore import (
    DEFAULT_READS_END,
    MARKER_PREFIX,
    SCENARIO,
    BookstoreLoad,
    BookstoreScenario,
    check_writes,
    remove_writes,
    verify,
)
from bench.measure.host_probe import cpu_probe_of, host_cpu_probe
from bench.measure.resultset import Progress
from bench.modes.bookstore.pgbench_replay import at_app_rate, reference, scripts, weights
from bench.modes.bookstore.postgres_work import PostgresWork, measure_idle
from bench.modes.bookstore.record import BookstoreResult, DatabaseAlone, Profile, WarmUp
from bench.modes.bookstore.wrk_load import WARM_SECONDS, measure_app, warm_up, wrk_command

RECREATE_STOP_SECONDS = 5  # an app container's stop, when a switch of READS_END_WITH makes it again


@dataclass(frozen=True)
class RunPlan:
    """What every round of a run is given, from the mode's arguments: the data's size, each measurement's seconds,
    the first warm-up's limit, the set's folder (for the profiles), and what to do in the first round."""

    scale: int
    seconds: int
    warm_limit: int
    out: Path
    profile_seconds: int = 0  # 0: no profile
    at_app_rate: bool = False  # pgbench also paced to each target's rate, in the first round
    # The loads, at one number of clients each, whose first round profiles each target.
    profiled: frozenset[tuple[str, int]] = frozenset()


@dataclass
class Prepared:
    """A target ready for its measurements with one ending of its reads: its pgbench scripts (from its captured
    SQL), the token that marks its writes, and how it warmed up; or why it cannot be measured."""

    texts: dict[str, str] = field(default_factory=dict)
    token: str = ""
    warm_up: WarmUp = field(default_factory=WarmUp)
    problem: str | None = None
    last_load: str | None = None  # the load of its last measurement: the next one at more clients needs no warm-up
    idle: dict[int, PostgresWork] = field(default_factory=dict)  # Postgres's idle work beside it, per repeat


def database_clients(target: Target, load: BookstoreLoad) -> int:
    """How many queries the database can get from the target at once: its pool, or fewer clients, or fewer
    threads in a sync server."""
    assert target.db_pool is not None  # every bookstore target says its pool (bookstore.yml's x-targets)
    return min(load.clients, target.db_pool, target.concurrency or load.clients)


def bookstore_fields(target: Target, load: BookstoreLoad, scale: int, seconds: int, run_ending: str) -> BookstoreResult:
    """A bookstore record before it is measured: the target (named after the ending of its reads where that is not
    the default), the load, and the clients the database sees from the target."""
    reads_end_with = target.reads_end_with or run_ending  # a rung of the ladder fixes its own
    record = BookstoreResult(
        **target.record_fields(), rung=target.rung, reads_end_with=reads_end_with,
        pgbench_protocol=pgbench.PROTOCOL[reads_end_with], db_pool=target.db_pool, load=load.name,
        request=load.request, clients=load.clients, db_clients=database_clients(target, load), scale=scale,
        seconds=seconds, loadgen="wrk", client="container", verified=False, ok=False,
    )  # fmt: skip
    if reads_end_with != DEFAULT_READS_END and not target.reads_end_with:  # named after what ran, as make bench
        return replace(record, target=f"{target.name} READS_END_WITH={reads_end_with}")  # names a variant
    return record


def set_paused(running: BookstoreScenario, service: str, paused: bool) -> None:
    if (service in running.paused) != paused:
        docker("pause" if paused else "unpause", running.container_ids()[service])
        (running.paused.add if paused else running.paused.discard)(service)


def activate(running: BookstoreScenario, target: Target, targets: list[Target], timeout: float = 120) -> None:
    """The target running and healthy, every other target paused: a paused container takes no CPU and sends
    Postgres no healthcheck, and keeps its pool, its caches and its JIT's work for its next turn."""
    pause_all(running, [other for other in targets if other.service != target.service])
    set_paused(running, target.service, False)
    deadline = time.monotonic() + timeout
    while running.health().get(target.service) != "healthy":
        if time.monotonic() > deadline:
            raise ScenarioError(f"{target.service} not healthy after {timeout:.0f} s:\n{running.logs()}")
        time.sleep(0.2)


def pause_all(running: BookstoreScenario, targets: list[Target]) -> None:
    for target in targets:
        set_paused(running, target.service, True)


def recreate_apps(running: BookstoreScenario, targets: list[Target], ending: str) -> None:
    """Every target's container made again with READS_END_WITH=`ending`, healthy, then paused as before."""
    running.environment["READS_END_WITH"] = ending
    for target in targets:  # a paused container cannot take the stop signal: it would wait 35 s
        set_paused(running, target.service, False)
    # Between rounds nothing is in flight: a graceful stop has nothing to wait for, yet a gevent worker's took its
    # whole 30 s in two runs of three here; 5 s, then SIGKILL.
    services = [target.service for target in targets]
    running.compose("up", "--detach", "--no-deps", "--timeout", str(RECREATE_STOP_SECONDS), *services)
    running.paused.clear()
    running.wait_healthy()
    pause_all(running, targets)


def prepare(
    running: BookstoreScenario, target: Target, load: BookstoreLoad, scale: int, ending: str, warm_limit: int
) -> Prepared:
    """The target's SQL captured into pgbench scripts, then warmed up under the first load it will be measured in."""
    token = secrets.token_hex(4)
    try:
        texts = scripts(running, target.service, scale, ending)
    except (ScenarioError, pgbench.TemplateError) as error:
        return Prepared(problem=f"not measured: {str(error).splitlines()[0][:300]}")
    remove_writes(running)  # the capture's own write: the data stays SCALE authors
    if verify(target, load, scale) is not None:
        return Prepared(texts, token)  # each measurement verifies, and says why
    return Prepared(texts, token, warm_up(running, target, load, scale, warm_limit), last_load=load.name)


def measure_target(
    running: BookstoreScenario,
    record: BookstoreResult,
    target: Target,
    load: BookstoreLoad,
    ready: Prepared,
    progress: Progress,
) -> tuple[BookstoreResult, dict[str, float]]:
    """The target under wrk: verified, warmed, Postgres's idle work measured (once a repeat), then loaded; its writes
    checked. The record, and the host's CPU probes around wrk (by moment, host_probe.MOMENTS)."""
    scale, seconds, repeat = record.scale, record.seconds, record.repeat or 1
    duration = round(seconds * load.duration_factor)
    problem = verify(target, load, scale)
    scripts_run = {name: ready.texts[name] for name in weights(load)}
    record = replace(record, verified=problem is None, problem=problem, seconds=duration, pgbench_scripts=scripts_run)
    if problem is not None:
        return record, {}
    label = f"{SCENARIO} / {target.name}"
    warming = 0 if ready.last_load == load.name else min(WARM_SECONDS, seconds)
    ready.last_load = load.name
    progress.show(label, f"{load.name}: warm-up {warming} s, then wrk -c {load.clients} {duration} s")
    if warming:
        warm = wrk_command(
            running.address(target.service), running.network(), load, scale, warming, f"{MARKER_PREFIX}warm"
        )
        subprocess.run(warm, capture_output=True)
    settle(running)
    if repeat not in ready.idle:
        ready.idle[repeat] = measure_idle(running, seconds)
    idle = ready.idle[repeat]
    probes = {"before": host_cpu_probe()}
    load_token = f"{MARKER_PREFIX}{ready.token}-{load.name}-{load.clients}"
    measured, acknowledged = measure_app(running, target, load, scale, duration, load_token, idle)
    record = replace(record.with_measured(measured), pg_busy_s_after_wrk=settle(running))
    probes["after_wrk"] = host_cpu_probe()
    if load.writes_per_thousand:
        record = record.with_measured(check_writes(running, load_token.removeprefix(MARKER_PREFIX), acknowledged))
        if len(acknowledged) != record.writes_acknowledged and not record.problem:
            record = replace(record, problem=f"{record.writes_acknowledged} 201s but {len(acknowledged)} markers")
        if record.writes_lost and not record.problem:
            lost = ", ".join(record.writes_lost_markers or [])
            record = replace(record, problem=f"{record.writes_lost} acknowledged writes not in the database ({lost})")
        remove_writes(running)
    return record, probes


def measure_round(
    running: BookstoreScenario,
    targets: list[Target],
    load: BookstoreLoad,
    plan: RunPlan,
    ending: str,
    prepared: dict[str, Prepared],
    progress: Progress,
    repeat: int,
) -> Iterator[BookstoreResult]:
    """One load at one number of clients: each target in turn, then the database alone (every app paused) for
    each set of scripts, clients and protocol the targets share, once: the reference of the round."""
    records: list[tuple[BookstoreResult, dict[str, float]]] = []  # each with its host probes so far
    for target in targets:
        record = replace(bookstore_fields(target, load, plan.scale, plan.seconds, ending), repeat=repeat)
        try:
            activate(running, target, targets)
        except ScenarioError as error:
            records.append((replace(record, problem=f"not measured: {error.in_one_line()}"), {}))
            continue
        if target.name not in prepared:
            progress.show(f"{SCENARIO} / {target.name}", f"capturing its SQL, warming up (at most {plan.warm_limit} s)")
            own_ending = record.reads_end_with or ending
            prepared[target.name] = prepare(running, target, load, plan.scale, own_ending, plan.warm_limit)
        ready = prepared[target.name]
        if ready.problem:
            records.append((replace(record, problem=ready.problem), {}))
            continue
        measured, probes = measure_target(running, record.with_measured(ready.warm_up), target, load, ready, progress)
        ready.warm_up = WarmUp()  # said once, in the target's first record
        profiled = (load.name, load.clients) in plan.profiled and measured.rps is not None
        if plan.profile_seconds and repeat == 1 and profiled:
            progress.show(f"{SCENARIO} / {target.name}", f"{load.name}: profiling for {plan.profile_seconds} s")
            measured = measured.with_measured(profile_target(running, target, load, plan, measured.target))
        records.append((measured, probes))
    pause_all(running, targets)
    references: dict[tuple[str, int, str | None], tuple[DatabaseAlone, dict[str, float], PostgresWork]] = {}
    for record, probes in records:
        if record.rps is None:  # not measured, or wrk did not finish: no reference to compare with
            yield replace(record, cpu_probe=cpu_probe_of(probes, judged=False))
            continue
        key = (json.dumps(record.pgbench_scripts, sort_keys=True), record.db_clients, record.pgbench_protocol)
        if key not in references:
            progress.show(SCENARIO, f"{load.name}: the database alone, pgbench -c {record.db_clients}")
            idle = measure_idle(running, plan.seconds)
            references[key] = (*reference(running, load, record, idle), idle)
        database_alone, reference_probes, idle = references[key]
        record = record.with_measured(database_alone)
        if plan.at_app_rate and repeat == 1 and record.rps:
            progress.show(SCENARIO, f"{load.name}: the database alone at {record.target}'s rate")
            record = record.with_measured(at_app_rate(running, load, record, idle))
        if record.pgbench_problem and not record.problem:
            record = replace(record, problem=f"pgbench: {record.pgbench_problem}")
        if record.rps and record.pgbench_tps:
            record = replace(record, vs_database=round(record.rps / record.pgbench_tps, 3))
        yield replace(record, cpu_probe=cpu_probe_of(probes | reference_probes, judged=True))


def profile_target(running: RunningScenario, target: Target, load: BookstoreLoad, plan: RunPlan, name: str) -> Profile:
    """py-spy on the target's server processes while wrk loads it (bench/measure/profile.py); the samples are kept
    in the set's profiles/ folder under the record's target `name`, their shares by category in the record."""
    if "pypy" in target.server:
        return Profile(profile_problem="not profiled: py-spy reads CPython's memory only")
    container = running.container_ids()[target.service]
    seconds = plan.profile_seconds
    # wrk runs until py-spy is done, however long the two containers take to start: the profile sees only loaded
    # seconds. (With a fixed 1.5 s for wrk's start and 3 s more for py-spy's, a rehearsal on 1.3 cores profiled a
    # server whose load had not begun or was over: no SQLAlchemy in its stacks.)
    load_command = wrk_command(running.address(target.service), running.network(), load, plan.scale,
                               seconds + PROFILE_LOAD_MOST, f"{MARKER_PREFIX}profile")  # fmt: skip
    problems = []
    # py-spy reads a running process's memory without stopping it (--nonblocking), which can fail now and then:
    # a second try, and the first one's error kept in the record.
    for _ in range(2):
        finished = profiled_under_load(load_command, profile.command(container, seconds))
        remove_writes(running)
        found, samples = profile.shares(finished.stdout)
        if finished.returncode == 0 and samples:
            break
        problems.append(f"not profiled: {(finished.stderr or finished.stdout).strip()[-300:]}")
    else:
        return Profile(profile_problem=problems[-1], profile_first_try=problems[0])
    file_name = name.replace(" READS_END_WITH=", "-")  # a variant's beside the default's, not over it
    stacks = plan.out / "profiles" / f"{file_name}-{load.name}-{load.clients}.txt"
    stacks.parent.mkdir(parents=True, exist_ok=True)
    stacks.write_text(finished.stdout)
    return Profile(
        profile=found, profile_samples=samples, profile_stacks=str(stacks.relative_to(plan.out)),
        profile_first_try=problems[0] if problems else None,
    )  # fmt: skip


PROFILE_LOAD_MOST = 120  # seconds wrk may run beyond the profile's own: it is stopped once py-spy is done


def profiled_under_load(load_command: list[str], profile_command: list[str]) -> subprocess.CompletedProcess[str]:
    """The profiler's run, started once the load's container runs, the load stopped after it."""
    name = f"flask-playground-profile-load-{secrets.token_hex(4)}"
    docker_run, options = load_command[:2], load_command[2:]
    with subprocess.Popen([*docker_run, "--name", name, *options], stdout=subprocess.DEVNULL,
                          stderr=subprocess.DEVNULL) as loading:  # fmt: skip
        try:
            deadline = time.monotonic() + 60
            while loading.poll() is None and time.monotonic() < deadline and not container_running(name):
                time.sleep(0.2)
            time.sleep(0.5)  # its connections opened and its first requests sent
            return subprocess.run(profile_command, capture_output=True, text=True)
        finally:
            subprocess.run(["docker", "kill", name], capture_output=True)
            loading.wait()


def container_running(name: str) -> bool:
    state = subprocess.run(
        ["docker", "inspect", "--format", "{{.State.Running}}", name], capture_output=True, text=True
    )
    return state.stdout.strip() == "true"
