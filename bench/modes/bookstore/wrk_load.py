"""A bookstore target under wrk (make bookstore's measurements): wrk from its image on the scenario's network,
bench/modes/bookstore.lua drawing the ids and pages and marking each write, while the app's and Postgres's processes
are sampled; the record of one measurement, and the warm-up that lasts until the server's CPU per request stops
falling."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from bench.containers import cgroup
from bench.containers import postgres as postgres_seen
from bench.containers.cgroup import container_cpu_seconds
from bench.containers.compose import RunningScenario
from bench.containers.scenarios import Target
from bench.loadgen import wrk
from bench.measure.bookstore import MARKER_PREFIX, PAGES, POST_BODY, BookstoreLoad
from bench.modes.bookstore.postgres_work import PostgresWork, ms_per, postgres_work, ratio, statements_per
from bench.modes.bookstore.record import AppUnderWrk, WarmUp

WARM_SECONDS = 5  # pools filled, the rows the load reads in Postgres's cache
# A target's first warm-up lasts until its CPU per request stops falling by more than WARM_STEADY a step: PyPy's
# JIT compiles SQLAlchemy's, marshmallow's and psycopg's hot paths only after thousands of requests (in a trial,
# 12.9 ms of CPU a request after 5 s of warm-up). At most the mode's --warm-limit seconds.
WARM_STEADY = 0.05
# The load's requests, drawn by wrk. Beside its mode, where the published pages and docs/bookstore.md name it.
LUA = Path(__file__).parents[1] / "bookstore.lua"
WRK_IMAGE = "flask-playground/wrk"


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


def measure_app(
    running: RunningScenario,
    target: Target,
    load: BookstoreLoad,
    scale: int,
    seconds: int,
    token: str,
    idle: PostgresWork,
) -> tuple[AppUnderWrk, list[str]]:
    """wrk against the target for `seconds`, its writes marked with `token`, while the app's and Postgres's processes
    are sampled: the record's fields (figures per request served, Postgres's less what it does idle (`idle`), or why
    there are none), and the markers of the writes wrk saw acknowledged."""
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
    shown = " ".join(command)
    try:
        result, counts = wrk.parse_wrk(output), parse_counts(output)
    except ValueError as error:
        return AppUnderWrk(command=shown, problem=f"wrk did not finish: {error}"), []
    statuses = {int(status): count for status, count in counts["statuses"].items()}
    # Per request served: a fast 503 or 504 is not a request's work, and would make the work look cheaper.
    served = sum(count for status, count in statuses.items() if 200 <= status < 300)
    usage, net = sampler.usage, work.minus(idle)
    read = sampler.problem is None  # else the sampler's figures are none, and not_sampled says why
    pg_cpu = ms_per(net.cpu_seconds, served)
    # Where the sampler could not read Postgres's cgroup (the harness in a container of its own), its memory once,
    # read as cgroup.py can (through the engine).
    pg_memory = usage.pg_memory_mb_peak or cgroup.container_memory_mb(containers["postgres"])
    return AppUnderWrk(
        command=shown,
        rps=round(result.rps * served / max(1, sum(statuses.values())), 2),
        rps_answered=result.rps,
        complete=result.complete,
        p50_ms=result.p50_ms,
        p99_ms=result.p99_ms,
        failed=result.failed,
        failure_kinds=result.failure_kinds,
        non2xx=result.non2xx,
        statuses={str(status): count for status, count in sorted(statuses.items())},
        status_503=statuses.get(503, 0),
        writes_acknowledged=counts["acknowledged_writes"],
        served=served,
        # The server's processes, from /proc: docker's healthcheck probes run in the container but are not the
        # server's work (a Python interpreter started every second).
        app_cpu_ms_per_request=ms_per(usage.cpu_seconds, served) if read else None,
        app_container_cpu_ms_per_request=ms_per(used[0], served),
        # What runs between the app and Postgres (pgbouncer), its whole container: its work is the target's too.
        db_via_cpu_ms_per_request=ms_per(used[1], served) if target.db_via else None,
        # Postgres's whole container, less what it does idle in as long (the healthchecks): what the requests cost.
        pg_cpu_ms_per_request=pg_cpu,
        pg_cpu_ms_per_request_gross=ms_per(work.cpu_seconds, served),
        pg_idle_cpu_ms_per_s=None if idle.cpu_seconds is None else round(1000 * idle.cpu_seconds / idle.seconds, 3),
        pg_window_s=round(work.seconds, 2),
        # What each request made Postgres do, counted by Postgres (pg_stat_statements), less the healthchecks'.
        pg_transactions_per_request=ratio(net.transactions, served),
        pg_statements_per_request=statements_per(net.statements, served),
        pg_cpu_ms_per_transaction=ms_per(net.cpu_seconds, net.transactions),
        rss_mb_peak=usage.rss_mb_peak if read else None,
        threads_peak=usage.threads_peak if read else None,
        pg_memory_mb_peak=pg_memory,
        pg_sessions_peak=usage.pg_sessions_peak if read else None,
        pg_busy_peak=usage.pg_busy_peak if read else None,
        machine_busy=usage.machine_busy,
        sampled_on=sampler.sampled_on,
        not_sampled=not_sampled(sampler.problem, pg_cpu, pg_memory),
        problem=app_problem(result, statuses, served),
    ), counts.get("acknowledged", [])


def app_problem(result: wrk.WrkResult, statuses: dict[int, int], served: int) -> str | None:
    """What spoils a measurement of the app under wrk, or None. A 503 is the app's own clear answer when its pool
    had no connection for a request within its timeout: past the pool, at many clients, that is what the app is
    built to do, and it counts as refused, not as failed. A request that failed (reset, timed out) or any other
    status is a problem; so are mostly 503s."""
    problems = []
    if result.failed:
        kinds = ", ".join(f"{kind} {count}" for kind, count in result.failure_kinds.items() if count)
        problems.append(f"wrk counted {result.failed} failures ({kinds or 'none'})")
    unexpected = {status: count for status, count in statuses.items() if status not in (200, 201, 503)}
    if unexpected:
        problems.append(f"answers other than 200, 201 and 503: {unexpected}")
    if served < statuses.get(503, 0):
        problems.append(f"more 503s than answers served: {statuses.get(503, 0)} of {sum(statuses.values())}")
    return "; ".join(problems) or None


def not_sampled(
    problem: str | None, pg_cpu_ms_per_request: float | None, pg_memory_mb_peak: float | None
) -> str | None:
    """Why figures could not be read: the sampler's `problem` (the app's and Postgres's processes; the cgroup's
    figures are read through the engine there, bench/containers/cgroup.py), and Postgres's cgroup unread. None where
    everything was read."""
    reasons = [f"the app's and Postgres's processes: {problem}"] if problem else []
    unread = [name for name, value in (("pg_cpu_ms_per_request", pg_cpu_ms_per_request),
                                       ("pg_memory_mb_peak", pg_memory_mb_peak)) if value is None]  # fmt: skip
    if unread:
        reasons.append(f"{' and '.join(unread)}: Postgres's {cgroup.UNREAD}")
    return "; ".join(reasons) or None


def warm_up(running: RunningScenario, target: Target, load: BookstoreLoad, scale: int, limit: int) -> WarmUp:
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
            return WarmUp(warm_up_s=warmed, warm_up_cpu_ms_per_request=per_request)
