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
import json
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from bench.containers import cgroup
from bench.containers import postgres as postgres_seen
from bench.containers.cgroup import container_cpu_seconds
from bench.containers.compose import RunningScenario, ScenarioError, docker
from bench.containers.postgres import TRANSACTION_ENDS, settle, statements_so_far
from bench.containers.roles import UNSTEADY_FACTOR
from bench.containers.sampler import EngineSampler, Sampler
from bench.containers.scenarios import Target
from bench.loadgen import pgbench, wrk
from bench.measure import profile
from bench.measure.bookstore import (
    BY_NAME,
    DATABASE,
    DEFAULT_READS_END,
    DEFAULT_SCALE,
    LOADS,
    MARKER_PREFIX,
    PAGE,
    PAGES,
    POST_BODY,
    SCENARIO,
    BookstoreLoad,
    BookstoreScenario,
    bookstore_targets,
    check_writes,
    psql,
    remove_writes,
    verify,
)
from bench.measure.client import choose_client
from bench.measure.host_probe import host_cpu_probe
from bench.measure.resultset import Progress, ResultSet
from bench.measure.scenario_start import ScenarioStart
from bench.measure.sql_capture import capture
from bench.render import bookstore as renderer
from bench.results.records import CpuProbe

SECONDS = 12  # the slow page's 1.5 times as long
WARM_SECONDS = 5  # pools filled, the rows the load reads in Postgres's cache
# Before each load, what Postgres does with nothing but the healthchecks running (about one a second from the app
# and from Docker's check of Postgres): subtracted from what it did during the load and during pgbench, for as long.
IDLE_SECONDS = 4
PROFILE_SECONDS = 8  # py-spy on each target in each load's first round, after its measurement
# A target's first warm-up lasts until its CPU per request stops falling by more than WARM_STEADY a step: PyPy's
# JIT compiles SQLAlchemy's, marshmallow's and psycopg's hot paths only after thousands of requests (in a trial,
# 12.9 ms of CPU a request after 5 s of warm-up). At most WARM_LIMIT seconds.
WARM_STEADY = 0.05
WARM_LIMIT = 120
LUA = Path(__file__).with_name("bookstore.lua")  # the load's requests, drawn by wrk
WRK_IMAGE = "flask-playground/wrk"
POSTGRES_IMAGE = "postgres:17"  # pgbench from the image the scenario's Postgres runs


def lua_arguments(load: BookstoreLoad, scale: int, token: str) -> list[str]:
    """bookstore.lua's arguments: load kind, SCALE, first offset, pages, writes per 1000, token, body."""
    kind = "list" if load.offset_share is not None else "mixed" if load.writes_per_thousand else "author"
    return [
        kind, str(scale), str(load.first_offset(scale)), str(PAGES), str(load.writes_per_thousand),
        token, json.dumps(POST_BODY),
    ]  # fmt: skip


def wrk_command(address: str, network: str, load: BookstoreLoad, scale: int, seconds: int, token: str) -> list[str]:
    """wrk from its image on the scenario's network, as pgbench runs: neither passes through docker-proxy."""
    arguments = lua_arguments(load, scale, token)
    return wrk.script_command(f"http://{address}:3000", network, load.clients, seconds, LUA, arguments, WRK_IMAGE)


def parse_counts(output: str) -> dict[str, Any]:
    """The BOOKSTORE line bookstore.lua prints: answers by status, and the writes acknowledged."""
    for line in output.splitlines():
        if line.startswith("BOOKSTORE "):
            return json.loads(line.removeprefix("BOOKSTORE "))
    raise ValueError("wrk printed no BOOKSTORE line: did bookstore.lua's done() run?")


def database_clients(target: Target, load: BookstoreLoad) -> int:
    """How many queries the database can get from the target at once: its pool, or fewer clients, or fewer
    threads in a sync server."""
    assert target.db_pool is not None  # every bookstore target says its pool (bookstore.yml's x-targets)
    return min(load.clients, target.db_pool, target.concurrency or load.clients)


LADDER_BASE = "bookstore-gunicorn-gevent"  # the unchanged app, the ladder's first rung (bookstore/ladder.py)


def chosen_targets(every: list[Target], names: list[str] | None, ladder: bool) -> list[Target]:
    """The targets named, or by default the ways of serving; with ladder, the unchanged app as rung 0 and the
    rungs."""
    if ladder:
        return [replace(target, rung=0) if target.name == LADDER_BASE else target
                for target in every if target.rung is not None or target.name == LADDER_BASE]  # fmt: skip
    return [target for target in every if target.name in names] if names else [t for t in every if t.rung is None]


# --- The scenario: one target alone, its captured SQL, Postgres's own queries ---------------------------------


def scripts(running: RunningScenario, service: str, scale: int, reads_end_with: str) -> dict[str, str]:
    """The pgbench scripts of this target: the fast read, the list (one template, a variable per offset) and
    the write. Captured at two values of each input, which must give the same SQL; the reads end as the app's do."""
    end = reads_end_with.upper()
    ids = (max(1, scale // 3), max(2, scale // 2 + 7))  # far from the page size and from each other
    captured = [(i, capture(running, service, "GET", f"/author/{i}")) for i in ids]
    reads = pgbench.in_transaction(captured[0][1], pgbench.template(captured, "id"), end)
    offsets = (PAGE * 3, PAGE * 7)
    captured = [(o, capture(running, service, "GET", f"/author?limit={PAGE}&offset={o}")) for o in offsets]
    pages = pgbench.in_transaction(captured[0][1], pgbench.template(captured, "offset"), end)
    # One marker for every target's pgbench writes: the same script, so that targets can share a reference.
    body = json.dumps(POST_BODY).replace("@@MARKER@@", f"{MARKER_PREFIX}pgbench")
    written = capture(running, service, "POST", "/author", body)
    write = pgbench.in_transaction(written, pgbench.fixed(written), "COMMIT")
    texts = {"author.sql": pgbench.script(pgbench.Variable("id", 1, scale), reads), "write.sql": "\n".join(write)}
    for load in LOADS:
        if load.offset_share is not None:
            first = load.first_offset(scale)
            variable = pgbench.Variable("offset", first, first + PAGE * (PAGES - 1), PAGE)
            texts[f"{load.name}.sql"] = pgbench.script(variable, pages)
    texts["write.sql"] += "\n"
    return texts


def weights(load: BookstoreLoad) -> dict[str, int]:
    """Which scripts pgbench runs for a load, each with its share in percent (the same mix as wrk's)."""
    if load.writes_per_thousand:
        writes = load.writes_per_thousand // 10
        return {"author.sql": 100 - writes, "write.sql": writes}
    return {"author.sql" if load.offset_share is None else f"{load.name}.sql": 100}


# --- One measurement: the target under wrk, then the database alone under pgbench ----------------------------


@dataclass
class PostgresWork:
    """What Postgres did over a stretch of time: its container's CPU seconds and its statements by kind."""

    seconds: float = 0.0
    cpu_seconds: float | None = None
    statements: dict[str, float] = field(default_factory=dict)

    def minus(self, idle: PostgresWork) -> PostgresWork:
        """This work without what Postgres does idle (the healthchecks) in as long."""
        times = self.seconds / idle.seconds if idle.seconds else 0.0
        cpu = None
        if self.cpu_seconds is not None and idle.cpu_seconds is not None:
            cpu = max(0.0, self.cpu_seconds - times * idle.cpu_seconds)
        kinds = set(self.statements) | set(idle.statements)
        statements = {k: max(0.0, self.statements.get(k, 0) - times * idle.statements.get(k, 0)) for k in kinds}
        return PostgresWork(self.seconds, cpu, statements)

    @property
    def transactions(self) -> float:
        return sum(self.statements.get(kind, 0) for kind in TRANSACTION_ENDS)


@contextmanager
def postgres_work(running: RunningScenario) -> Iterator[PostgresWork]:
    """Measures what Postgres does inside the block. The statement counts are read outside the window of time
    and CPU: the psql that reads them is not the load's work."""
    container = running.container_ids()["postgres"]
    work, statements = PostgresWork(), statements_so_far(running, DATABASE)
    cpu, started = container_cpu_seconds(container), time.monotonic()
    yield work
    work.seconds, after = time.monotonic() - started, container_cpu_seconds(container)
    work.cpu_seconds = None if cpu is None or after is None else after - cpu
    counted = statements_so_far(running, DATABASE)
    work.statements = {kind: calls - statements.get(kind, 0) for kind, calls in counted.items()}


def measure_idle(running: RunningScenario, seconds: float = IDLE_SECONDS) -> PostgresWork:
    with postgres_work(running) as idle:
        time.sleep(min(IDLE_SECONDS, seconds))  # a short run's (a test's) for as long as its loads
    return idle


def measure_app(
    running: RunningScenario,
    target: Target,
    load: BookstoreLoad,
    scale: int,
    seconds: int,
    token: str,
    idle: PostgresWork,
) -> dict[str, Any]:
    containers = running.container_ids()
    app = containers[target.service]
    command = wrk_command(running.address(target.service), running.network(), load, scale, seconds, token)
    # Its sessions only (the paused targets keep theirs open): a target behind pgbouncer has pgbouncer's.
    where = running.address(target.db_via or target.service)
    sampler = postgres_seen.sampler(running, target.service, where)
    watched = [app] + ([containers[target.db_via]] if target.db_via else [])
    with postgres_work(running) as work:
        before = [container_cpu_seconds(container) for container in watched]
        with sampler:
            finished = subprocess.run(command, capture_output=True, text=True)
        after = [container_cpu_seconds(container) for container in watched]
    used = [None if start is None or end is None else end - start for start, end in zip(before, after, strict=True)]
    output = finished.stdout + finished.stderr
    record: dict[str, Any] = {"command": " ".join(command)}
    try:
        result, counts = wrk.parse_wrk(output), parse_counts(output)
    except ValueError as error:
        return record | {"problem": f"wrk did not finish: {error}"}
    statuses = {int(status): count for status, count in counts["statuses"].items()}
    # Per request served: a fast 503 or 504 is not a request's work, and would make the work look cheaper.
    served = sum(count for status, count in statuses.items() if 200 <= status < 300)
    usage, net = sampler.usage, work.minus(idle)
    record |= {
        "rps": round(result.rps * served / max(1, sum(statuses.values())), 2),  # served: 2xx answers
        "rps_answered": result.rps,  # every answer, 503s too
        "complete": result.complete,
        "p50_ms": result.p50_ms,
        "p99_ms": result.p99_ms,
        "failed": result.failed,
        "failure_kinds": result.failure_kinds,
        "non2xx": result.non2xx,
        "statuses": {str(status): count for status, count in sorted(statuses.items())},
        "acknowledged": counts.get("acknowledged", []),  # taken out by run_target once the writes are checked
        "status_503": statuses.get(503, 0),
        "writes_acknowledged": counts["acknowledged_writes"],
        "served": served,
        # The server's processes, from /proc: docker's healthcheck probes run in the container but are not the
        # server's work (a Python interpreter started every second).
        "app_cpu_ms_per_request": _per(usage.cpu_seconds, served),
        "app_container_cpu_ms_per_request": _per(used[0], served),
        # What runs between the app and Postgres (pgbouncer), its whole container: its work is the target's too.
        "db_via_cpu_ms_per_request": _per(used[1], served) if target.db_via else None,
        # Postgres's whole container, less what it does idle in as long (the healthchecks): what the requests cost.
        "pg_cpu_ms_per_request": _per(net.cpu_seconds, served),
        "pg_cpu_ms_per_request_gross": _per(work.cpu_seconds, served),
        "pg_idle_cpu_ms_per_s": None if idle.cpu_seconds is None else round(1000 * idle.cpu_seconds / idle.seconds, 3),
        "pg_window_s": round(work.seconds, 2),
        # What each request made Postgres do, counted by Postgres (pg_stat_statements), less the healthchecks'.
        "pg_transactions_per_request": _ratio(net.transactions, served),
        "pg_statements_per_request": _kinds(net.statements, served),
        "pg_cpu_ms_per_transaction": _per(net.cpu_seconds, net.transactions),
        "rss_mb_peak": usage.rss_mb_peak,
        "threads_peak": usage.threads_peak,
        # Where the sampler could not read Postgres's cgroup (the harness in a container of its own), its memory
        # once, read as cgroup.py can (through the engine).
        "pg_memory_mb_peak": usage.pg_memory_mb_peak or cgroup.container_memory_mb(containers["postgres"]),
        "pg_sessions_peak": usage.pg_sessions_peak,
        "pg_busy_peak": usage.pg_busy_peak,
        "machine_busy": usage.machine_busy,
        "sampled_on": sampler.sampled_on,
    }
    record |= not_sampled(sampler, record)
    # A 503 is the app's own clear answer when its pool had no connection for a request within its timeout: past
    # the pool, at many clients, that is what the app is built to do, and it counts as refused, not as failed.
    # A request that failed (reset, timed out) or any other status is a problem; so are mostly 503s.
    problems = []
    if result.failed:
        kinds = ", ".join(f"{kind} {count}" for kind, count in result.failure_kinds.items() if count)
        problems.append(f"wrk counted {result.failed} failures ({kinds or 'none'})")
    unexpected = {status: count for status, count in statuses.items() if status not in (200, 201, 503)}
    if unexpected:
        problems.append(f"answers other than 200, 201 and 503: {unexpected}")
    if served < statuses.get(503, 0):
        problems.append(f"more 503s than answers served: {statuses.get(503, 0)} of {sum(statuses.values())}")
    record["problem"] = "; ".join(problems) or None
    return record


# The figures of the sampler, empty where it could not run (through the engine); the cgroup's figures are read
# through the engine there (bench/containers/cgroup.py).
SAMPLED = ("app_cpu_ms_per_request", "rss_mb_peak", "threads_peak", "pg_sessions_peak", "pg_busy_peak")


def not_sampled(sampler: Sampler | EngineSampler, record: dict[str, Any]) -> dict[str, Any]:
    """The figures that could not be read, emptied, and why (`not_sampled`): none, where the sampler ran."""
    reasons, emptied = [], {}
    if sampler.problem:
        emptied = dict.fromkeys(SAMPLED)
        reasons.append(f"the app's and Postgres's processes: {sampler.problem}")
    unread = [key for key in ("pg_cpu_ms_per_request", "pg_memory_mb_peak") if record.get(key) is None]
    if unread:
        reasons.append(f"{' and '.join(unread)}: Postgres's {cgroup.UNREAD}")
    return emptied | ({"not_sampled": "; ".join(reasons)} if reasons else {})


def _per(seconds: float | None, count: float) -> float | None:
    """Milliseconds per item, or None when there is no figure or nothing to divide by."""
    return None if seconds is None or count < 1 else round(1000 * seconds / count, 3)


def _ratio(part: float, whole: float) -> float | None:
    return round(part / whole, 3) if whole >= 1 else None


def _kinds(statements: dict[str, float], served: int) -> dict[str, float]:
    """Statements per request by kind, the ones that happen at least once in 200 requests."""
    per = {kind: _ratio(calls, served) or 0.0 for kind, calls in sorted(statements.items())}
    return {kind: value for kind, value in per.items() if value >= 0.005}


def measure_database(
    running: RunningScenario,
    load: BookstoreLoad,
    clients: int,
    seconds: int,
    script_dir: Path,
    protocol: str,
    idle: PostgresWork,
    rate: float | None = None,
) -> dict[str, Any]:
    scripts_in = {f"/scripts/{name}": weight for name, weight in weights(load).items()}
    inside = pgbench.command(scripts_in, clients, seconds, DATABASE, protocol, rate)
    password = running.environment.get("POSTGRES_PASSWORD") or "playground"
    command = pgbench.container_command(inside, running.network(), script_dir, password, POSTGRES_IMAGE)
    sampler = postgres_seen.sampler(running, None)
    with postgres_work(running) as work, sampler:
        finished = subprocess.run(command, capture_output=True, text=True)
    record: dict[str, Any] = {"pgbench_command": pgbench.shown(command)}
    try:
        result = pgbench.parse(finished.stdout + finished.stderr)
    except ValueError as error:
        return record | {"pgbench_problem": str(error)}
    net = work.minus(idle)
    return record | {
        "pgbench_tps": round(result.tps, 1),
        "pgbench_transactions": result.transactions,
        "pgbench_failed": result.failed,
        "pgbench_latency_ms": result.latency_ms,
        # Postgres's own count, as for the app: the same statements per transaction as the app's per request, or
        # pgbench does not stand for the app. Not BEGIN and COMMIT under --protocol prepared: pg_stat_statements
        # does not count a transaction command sent as a prepared statement.
        "pgbench_statements_per_transaction": _kinds(net.statements, result.transactions),
        "pgbench_pg_cpu_ms_per_transaction": _per(net.cpu_seconds, result.transactions),
        "pgbench_pg_cpu_ms_per_transaction_gross": _per(work.cpu_seconds, result.transactions),
        "pgbench_busy_peak": sampler.usage.pg_busy_peak,
        "pgbench_pg_memory_mb_peak": sampler.usage.pg_memory_mb_peak,
        "pgbench_problem": f"{result.failed} transactions failed" if result.failed else None,
    }


def describe(target: Target, load: BookstoreLoad, scale: int, seconds: int, run_ending: str) -> dict[str, Any]:
    described = target.describe()
    reads_end_with = target.reads_end_with or run_ending  # a rung of the ladder fixes its own
    if reads_end_with != DEFAULT_READS_END and not target.reads_end_with:  # named after what ran, as make bench
        described["target"] = f"{target.name} READS_END_WITH={reads_end_with}"  # names a variant
    return {
        **described,
        "rung": target.rung,
        "reads_end_with": reads_end_with,
        "pgbench_protocol": pgbench.PROTOCOL[reads_end_with],
        "db_pool": target.db_pool,
        "load": load.name,
        "request": load.request,
        "clients": load.clients,
        "db_clients": database_clients(target, load),
        "scale": scale,
        "seconds": seconds,
        "loadgen": "wrk",
        "client": "container",
    }


@dataclass
class Prepared:
    """A target ready for its measurements with one ending of its reads: its pgbench scripts (from its captured
    SQL), the token that marks its writes, and how it warmed up; or why it cannot be measured."""

    texts: dict[str, str] = field(default_factory=dict)
    token: str = ""
    warm_up: dict[str, Any] = field(default_factory=dict)
    problem: str | None = None
    last_load: str | None = None  # the load of its last measurement: the next one at more clients needs no warm-up
    idle: dict[int, PostgresWork] = field(default_factory=dict)  # Postgres's idle work beside it, per repeat


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


def warm_up(running: RunningScenario, target: Target, load: BookstoreLoad, scale: int, limit: int) -> dict[str, Any]:
    """wrk in steps of WARM_SECONDS until the server's CPU per request stops falling (within WARM_STEADY of the
    step before), for at most `limit` seconds: PyPy's JIT compiles the hot paths only after thousands of requests,
    CPython is done after two steps. The seconds it took, and the CPU per request of each step."""
    step = min(WARM_SECONDS, limit)
    where, network = running.address(target.service), running.network()
    per_request: list[float] = []
    while True:
        command = wrk_command(where, network, load, scale, step, f"{MARKER_PREFIX}warm")
        with postgres_seen.sampler(running, target.service, postgres=False) as sampler:  # the server's CPU alone
            finished = subprocess.run(command, capture_output=True, text=True)
        try:
            complete = wrk.parse_wrk(finished.stdout + finished.stderr).complete
        except ValueError:
            complete = 0
        per_request.append(round(1000 * sampler.usage.cpu_seconds / max(1, complete), 3))
        warmed = step * len(per_request)
        falling = len(per_request) < 2 or per_request[-1] < (1 - WARM_STEADY) * per_request[-2]
        if not falling or warmed + step > limit:
            return {"warm_up_s": warmed, "warm_up_cpu_ms_per_request": per_request}


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
    target: Target,
    load: BookstoreLoad,
    scale: int,
    seconds: int,
    ready: Prepared,
    progress: Progress,
    repeat: int,
) -> dict[str, Any]:
    """The target under wrk: verified, warmed, Postgres's idle work measured (once a repeat), then loaded; its writes
    checked."""
    duration = round(seconds * load.duration_factor)
    problem = verify(target, load, scale)
    scripts_run = {name: ready.texts[name] for name in weights(load)}
    record: dict[str, Any] = {
        "verified": problem is None,
        "problem": problem,
        "seconds": duration,
        "pgbench_scripts": scripts_run,
    }
    if problem is not None:
        return record
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
    record["cpu_probe_s_before"] = host_cpu_probe()
    load_token = f"{MARKER_PREFIX}{ready.token}-{load.name}-{load.clients}"
    record |= measure_app(running, target, load, scale, duration, load_token, idle)
    acknowledged: list[str] = record.pop("acknowledged", [])
    record["pg_busy_s_after_wrk"] = settle(running)
    record["cpu_probe_s_after_wrk"] = host_cpu_probe()
    if load.writes_per_thousand:
        record |= check_writes(running, load_token.removeprefix(MARKER_PREFIX), acknowledged)
        if len(acknowledged) != record.get("writes_acknowledged") and not record["problem"]:
            record["problem"] = f"{record.get('writes_acknowledged')} 201s but {len(acknowledged)} markers"
        if record["writes_lost"] and not record["problem"]:
            lost = ", ".join(record["writes_lost_markers"])
            record["problem"] = f"{record['writes_lost']} acknowledged writes not in the database ({lost})"
        remove_writes(running)
    return record


def measure_round(
    running: BookstoreScenario,
    targets: list[Target],
    load: BookstoreLoad,
    plan: RunPlan,
    ending: str,
    prepared: dict[str, Prepared],
    progress: Progress,
    repeat: int,
) -> Iterator[dict[str, Any]]:
    """One load at one number of clients: each target in turn, then the database alone (every app paused) for
    each set of scripts, clients and protocol the targets share, once: the reference of the round."""
    records = []
    for target in targets:
        record = describe(target, load, plan.scale, plan.seconds, ending) | {"repeat": repeat}
        try:
            activate(running, target, targets)
        except ScenarioError as error:
            records.append(record | {"verified": False, "problem": f"not measured: {error.in_one_line()}"})
            continue
        if target.name not in prepared:
            progress.show(f"{SCENARIO} / {target.name}", f"capturing its SQL, warming up (at most {plan.warm_limit} s)")
            own_ending = record["reads_end_with"]
            prepared[target.name] = prepare(running, target, load, plan.scale, own_ending, plan.warm_limit)
        ready = prepared[target.name]
        if ready.problem:
            records.append(record | {"verified": False, "problem": ready.problem})
            continue
        measured = record | ready.warm_up
        measured |= measure_target(running, target, load, plan.scale, plan.seconds, ready, progress, repeat)
        ready.warm_up = {}  # said once, in the target's first record
        if plan.profile_seconds and repeat == 1 and (load.name, load.clients) in plan.profiled and "rps" in measured:
            progress.show(f"{SCENARIO} / {target.name}", f"{load.name}: profiling for {plan.profile_seconds} s")
            measured |= profile_target(running, target, load, plan)
        records.append(measured)
    pause_all(running, targets)
    references: dict[tuple[str, int, str], dict[str, Any]] = {}
    for record in records:
        if "rps" not in record:
            yield with_cpu_probe(record, judged=False)
            continue
        key = (json.dumps(record["pgbench_scripts"], sort_keys=True), record["db_clients"], record["pgbench_protocol"])
        if key not in references:
            progress.show(SCENARIO, f"{load.name}: the database alone, pgbench -c {record['db_clients']}")
            idle = measure_idle(running, plan.seconds)
            references[key] = reference(running, load, record, idle) | {"idle": idle}
        record |= {name: value for name, value in references[key].items() if name != "idle"}
        if plan.at_app_rate and repeat == 1 and record.get("rps"):
            progress.show(SCENARIO, f"{load.name}: the database alone at {record['target']}'s rate")
            record |= at_app_rate(running, load, record, references[key]["idle"])
        if record.get("pgbench_problem") and not record["problem"]:
            record["problem"] = f"pgbench: {record['pgbench_problem']}"
        if record.get("rps") and record.get("pgbench_tps"):
            record["vs_database"] = round(record["rps"] / record["pgbench_tps"], 3)
        yield with_cpu_probe(record, judged=True)


# The CPU probe on the host around a target's wrk and around its reference's pgbench, each kept under its own key
# while the round runs: the measurement is steady when the machine's speed kept within UNSTEADY_FACTOR over all
# four, as make bench marks its own.
PROBES = {
    "before": "cpu_probe_s_before",
    "after_wrk": "cpu_probe_s_after_wrk",
    "pgbench_before": "pgbench_cpu_probe_s_before",
    "after": "cpu_probe_s_after",
}


def with_cpu_probe(record: dict[str, Any], judged: bool) -> dict[str, Any]:
    """The record with its host probes as one `cpu_probe` (bench/results/records.py), judged once the database
    alone has run too; a measurement that stopped before that keeps its times unjudged."""
    seconds = {moment: record.pop(key) for moment, key in PROBES.items() if key in record}
    if seconds:
        host = {"host": seconds}
        probe = CpuProbe.judged(host, UNSTEADY_FACTOR) if judged else CpuProbe(host, {}, None)
        record["cpu_probe"] = probe.to_json()
    return record


@contextmanager
def scripts_folder(record: dict[str, Any]) -> Iterator[Path]:
    """The record's pgbench scripts in a folder of their own, for pgbench's container to mount."""
    with tempfile.TemporaryDirectory(prefix="bookstore-pgbench-") as directory:
        script_dir = Path(directory)
        script_dir.chmod(0o755)  # pgbench reads them as its image's user
        for name, text in record["pgbench_scripts"].items():
            (script_dir / name).write_text(text)
        yield script_dir


def reference(
    running: BookstoreScenario,
    load: BookstoreLoad,
    record: dict[str, Any],
    idle: PostgresWork,
    rate: float | None = None,
) -> dict[str, Any]:
    """pgbench running the record's scripts at its database clients, Postgres alone; at full speed, or paced to a
    rate."""
    with scripts_folder(record) as script_dir:
        before = host_cpu_probe()
        measured = measure_database(
            running, load, record["db_clients"], record["seconds"], script_dir, record["pgbench_protocol"], idle, rate
        )
        after = host_cpu_probe()
    remove_writes(running)
    return measured | {"pgbench_cpu_probe_s_before": before, "cpu_probe_s_after": after}


def at_app_rate(
    running: BookstoreScenario, load: BookstoreLoad, record: dict[str, Any], idle: PostgresWork
) -> dict[str, Any]:
    """pgbench paced to the target's own requests per second: what Postgres spends per transaction at the app's
    pace, its backends waiting between statements as they do behind the app, rather than at pgbench's full speed."""
    measured = reference(running, load, record, idle, rate=record["rps"])
    kept = ("pgbench_command", "pgbench_tps", "pgbench_pg_cpu_ms_per_transaction", "pgbench_problem")
    return {name.replace("pgbench_", "pgbench_at_app_rate_", 1): measured.get(name) for name in kept}


@dataclass(frozen=True)
class RunPlan:
    scale: int
    seconds: int
    warm_limit: int
    out: Path
    profile_seconds: int = 0  # 0: no profile
    at_app_rate: bool = False  # pgbench also paced to each target's rate, in the first round
    # The loads, at one number of clients each, whose first round profiles each target.
    profiled: frozenset[tuple[str, int]] = frozenset()


def profiled_clients(loads: list[BookstoreLoad]) -> frozenset[tuple[str, int]]:
    """Per load, the number of clients it is profiled at: its own, or the swept one nearest to it."""
    chosen: dict[str, int] = {}
    for load in loads:
        own = BY_NAME[load.name].clients
        best = chosen.get(load.name)
        if best is None or abs(load.clients - own) < abs(best - own):
            chosen[load.name] = load.clients
    return frozenset(chosen.items())


def profile_target(running: RunningScenario, target: Target, load: BookstoreLoad, plan: RunPlan) -> dict[str, Any]:
    """py-spy on the target's server processes while wrk loads it (bench/measure/profile.py); the samples are kept
    in the set's profiles/ folder, their shares by category in the record."""
    if "pypy" in target.server:
        return {"profile_problem": "not profiled: py-spy reads CPython's memory only"}
    container = running.container_ids()[target.service]
    seconds = plan.profile_seconds
    # wrk starts first and ends after: the profile sees only the loaded seconds.
    load_command = wrk_command(running.address(target.service), running.network(), load, plan.scale, seconds + 3,
                               f"{MARKER_PREFIX}profile")  # fmt: skip
    problems = []
    # py-spy reads a running process's memory without stopping it (--nonblocking), which can fail now and then:
    # a second try, and the first one's error kept in the record.
    for _ in range(2):
        with subprocess.Popen(load_command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) as loading:
            time.sleep(1.5)
            finished = subprocess.run(profile.command(container, seconds), capture_output=True, text=True)
            loading.wait()
        remove_writes(running)
        found, samples = profile.shares(finished.stdout)
        if finished.returncode == 0 and samples:
            break
        problems.append(f"not profiled: {(finished.stderr or finished.stdout).strip()[-300:]}")
    else:
        return {"profile_problem": problems[-1], "profile_first_try": problems[0]}
    stacks = plan.out / "profiles" / f"{target.name}-{load.name}-{load.clients}.txt"
    stacks.parent.mkdir(parents=True, exist_ok=True)
    stacks.write_text(finished.stdout)
    measured = {"profile": found, "profile_samples": samples, "profile_stacks": str(stacks.relative_to(plan.out))}
    return measured | ({"profile_first_try": problems[0]} if problems else {})


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
) -> Iterator[dict[str, Any]]:
    """Every repeat, ending, load and number of clients in turn, each a round of the targets."""
    prepared: dict[str, Prepared] = {}
    created_with = running.environment["READS_END_WITH"]
    pause_all(running, targets)
    for repeat in range(1, repeats + 1):
        for ending in endings_in_turn(endings, repeat):
            if ending != created_with:
                progress.show(SCENARIO, f"recreating the apps with READS_END_WITH={ending}")
                running.environment["READS_END_WITH"] = created_with = ending
                for target in targets:  # a paused container cannot take the stop signal: it would wait 35 s
                    set_paused(running, target.service, False)
                running.compose("up", "--detach", "--no-deps", *[target.service for target in targets])
                running.paused.clear()
                running.wait_healthy()
                pause_all(running, targets)
                prepared.clear()  # new containers: captured and warmed again
            for load in loads:
                yield from measure_round(running, targets, load, plan, ending, prepared, progress, repeat)


def database_facts(running: RunningScenario) -> dict[str, Any]:
    authors = psql(running, "SELECT count(*) FROM authors")
    books = psql(running, "SELECT count(*) FROM books")
    size = psql(running, f"SELECT pg_size_pretty(pg_database_size('{DATABASE}'))")
    return {"authors": int(authors), "books": int(books), "size": size}


def clients_of(args: argparse.Namespace, load: str) -> list[int]:
    """The numbers of clients a load runs at: --clients, or its sweep with --sweep, or its own."""
    own = BY_NAME[load]
    return list(args.clients or (args.sweep and own.sweep) or [own.clients])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.modes.bookstore", description=__doc__)
    parser.add_argument("--scale", type=int, default=DEFAULT_SCALE, help="authors in the data (its own volume)")
    parser.add_argument("--targets", nargs="*", metavar="TARGET", help="default: every target of bookstore.yml")
    parser.add_argument("--loads", nargs="*", default=list(BY_NAME), choices=BY_NAME, metavar="LOAD")
    parser.add_argument(
        "--clients", nargs="+", type=int, metavar="N",
        help="every load at each of these numbers of clients; default: each load's own",
    )  # fmt: skip
    parser.add_argument("--sweep", action="store_true", help="each load at its sweep's clients (author and slow)")
    parser.add_argument("--repeats", type=int, default=1, help="rounds of every load, each with its reference")
    parser.add_argument("--seconds", type=int, default=SECONDS, help="of wrk, and of pgbench, per measurement")
    parser.add_argument(
        "--warm-limit", type=int, default=WARM_LIMIT, metavar="SECONDS",
        help="a target's first warm-up ends when its CPU per request stops falling, or after this long",
    )  # fmt: skip
    parser.add_argument(
        "--reads-end-with", nargs="+", choices=pgbench.PROTOCOL, metavar="ENDING",
        default=(os.environ.get("READS_END_WITH") or DEFAULT_READS_END).split(),
        help="how the app's reads end (rollback, commit, or both: each target measured with each in turn), and so"
        " whether its statements stay prepared (docs/bookstore.md)",
    )  # fmt: skip
    parser.add_argument(
        "--profile-seconds", type=int, default=PROFILE_SECONDS, metavar="SECONDS",
        help="py-spy on each target for this long in each load's first round (0: no profile)",
    )  # fmt: skip
    parser.add_argument(
        "--ladder", action="store_true",
        help="the ladder instead of the ways of serving: the unchanged one-process gevent target, then each rung of"
        " bookstore/ladder.py's changes (with --loads author, its endpoint)",
    )  # fmt: skip
    parser.add_argument(
        "--at-app-rate", action="store_true",
        help="in the first round, pgbench also paced to each target's own requests per second: Postgres's CPU per"
        " transaction at the app's pace",
    )  # fmt: skip
    parser.add_argument("--out", type=Path)
    arguments = sys.argv[1:] if argv is None else argv
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

    def keep(record: dict[str, Any]) -> None:
        record["ok"] = record["verified"] and not record["problem"]
        results.add(record)
        progress.done += 1
        share = f", {record['vs_database']:.2f} of the database alone" if record.get("vs_database") else ""
        verdict = "ok" if record["ok"] else f"NOT OK: {record['problem']}"
        print(f"    {record['target']} {record['load']} -c {record['clients']}: {record.get('rps', '-')} requests/s"
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
        measured = {(r["target"], r["load"], r["clients"], r.get("repeat")) for r in results.written}
        for repeat in range(1, args.repeats + 1):
            for ending in endings:
                for target in targets:
                    for load in loads:
                        record = describe(target, load, args.scale, args.seconds, ending) | {"repeat": repeat}
                        if (record["target"], load.name, load.clients, repeat) not in measured:
                            keep(record | {"verified": False, "problem": f"not measured: {start.reason}"})
    failures = sorted({f"{r['target']}/{r['load']}" for r in results.written if not r["ok"]})
    renderer.render(results.out, results.finish())
    return results.say(failures, "results.json, results.md, charts, index.html")


if __name__ == "__main__":
    sys.exit(main())
