"""`make bookstore`: the bookstore app (bookstore.yml) served each way, under loads that look like users', each
beside what the database alone does with the same SQL at the same concurrency.

For each target, alone (the other app services stopped, so their healthchecks cost nothing), and each load:
one request of each kind verified, a warm-up, then wrk for SECONDS from a container on the scenario's network
(bench/modes/bookstore.lua draws the ids and pages) while the app's and Postgres's processes are sampled, then pgbench
for SECONDS from a container of the postgres image on the same network, replaying the SQL captured from this
target for the same endpoint (bench/loadgen/pgbench.py) at the concurrency the database sees from the target. The
target's throughput reads as a share of the database's: `vs_database`. A CPU probe on the host before and after
says whether the machine's speed moved in between.

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
from dataclasses import dataclass
from pathlib import Path

import requests
import yaml

from bench.containers import cgroup
from bench.containers.cgroup import container_cpu_seconds
from bench.containers.compose import RunningScenario, ScenarioError
from bench.containers.postgres import PostgresSampler, query, settle
from bench.containers.scenarios import ROOT, Target, interpolate
from bench.loadgen import pgbench, wrk
from bench.measure.resultset import Progress, ResultSet
from bench.measure.sql_capture import capture
from bench.measure.target import choose_client, host_cpu_probe, image_packages

SCENARIO = "bookstore"
COMPOSE_FILE = ROOT / "bookstore.yml"
DEFAULT_SCALE = 1_000_000
SECONDS = 12  # the slow page's 1.5 times as long
WARM_SECONDS = 5  # pools filled, the rows the load reads in Postgres's cache
# A target's first load warms longer: PyPy's JIT compiles SQLAlchemy's, marshmallow's and psycopg's hot paths
# only after thousands of requests (in a trial, 12.9 ms of CPU a request after 5 s of warm-up).
FIRST_WARM_SECONDS = 20
DATABASE = "bookstore"
LUA = Path(__file__).with_name("bookstore.lua")  # the load's requests, drawn by wrk
WRK_IMAGE = "flask-playground/wrk"
POSTGRES_IMAGE = "postgres:17"  # pgbench from the image the scenario's Postgres runs
PAGES = 50  # a list load reads one of 50 pages from its offset on: 1,000 authors, at about the same cost
PAGE = 20
# Every write of a run carries this prefix in its name: counted after the load, then deleted, so that the
# data volume keeps exactly SCALE authors for the next run and for the app's tests.
MARKER_PREFIX = "make-bookstore-"


@dataclass(frozen=True)
class BookstoreLoad:
    """One kind of traffic: what each request asks, from how many clients at once."""

    name: str
    request: str  # in words, for the tables
    clients: int
    offset_share: float | None = None  # list loads: the offset as a share of SCALE (the article's 5 % and 50 %)
    writes_per_thousand: int = 0
    # Longer for the slow loads: a few requests per second, and each measurement counts only the whole ones.
    duration_factor: float = 1.0

    def first_offset(self, scale: int) -> int:
        return round(scale * (self.offset_share or 0))


# Clients, each load's own (docs/bookstore.md: what queues where). The fast ones at twice the pool (16): requests
# also wait for a connection in the app, as users' would. The slow page at the pool's size: the database works on
# 16 at once on two cores, each request holds its connection throughout, and none waits out the pool's 10 s for
# one. It runs longer: wrk counts only the answers in by its end, so a page still running then is lost (up to
# half a page per client), a share that shrinks with the length of the run.
DEFAULT_READS_END = "rollback"  # as bookstore.yml's READS_END_WITH: what most apps' reads do
LOADS = (
    BookstoreLoad("author", "GET /author/<random id>", 32),
    BookstoreLoad("moderate", "GET /author?limit=20&offset=SCALE/20 + a page", 32, 0.05),
    BookstoreLoad("slow", "GET /author?limit=20&offset=SCALE/2 + a page", 16, 0.5, duration_factor=1.5),
    BookstoreLoad("mixed", "90 % GET /author/<random id>, 10 % POST /author", 32, writes_per_thousand=100),
)
BY_NAME = {load.name: load for load in LOADS}
POST_BODY = {"name": "@@MARKER@@", "country_code": "GB", "date_of_birth": "1980-02-29", "biography": "bench"}


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


def parse_counts(output: str) -> dict:
    """The BOOKSTORE line bookstore.lua prints: answers by status, and the writes acknowledged."""
    for line in output.splitlines():
        if line.startswith("BOOKSTORE "):
            return json.loads(line.removeprefix("BOOKSTORE "))
    raise ValueError("wrk printed no BOOKSTORE line: did bookstore.lua's done() run?")


def database_clients(target: Target, load: BookstoreLoad) -> int:
    """How many queries the database can get from the target at once: its pool, or fewer clients, or fewer
    threads in a sync server."""
    return min(load.clients, target.db_pool, target.concurrency or load.clients)


class BookstoreScenario(RunningScenario):
    """bookstore.yml as a RunningScenario, named by its file (the scenario list may not name it), removed on exit
    without its data volume: a million authors take minutes to generate, and the volume is the user's."""

    def __init__(self, environment: dict[str, str], services: list[str]) -> None:
        # RunningScenario's own settings, without looking the name up: the first start generates the data.
        self.scenario, self.file, self.build, self.ready_timeout = SCENARIO, COMPOSE_FILE, True, 1800.0
        self.environment = {**os.environ, **environment}
        self._seen = {}  # RunningScenario.sees_processes asks once per service
        self.started = services  # and Postgres, which they depend on: only what is measured is built and started

    def up(self) -> None:
        self.compose("up", "--detach", "--build", *self.started)
        self.wait_healthy()

    def down(self) -> None:
        self.compose("down", "--remove-orphans", "--timeout", "10", check=False)


def bookstore_targets(environment: dict[str, str]) -> list[Target]:
    """The x-targets of bookstore.yml, as bench.containers.scenarios.load_targets reads a scenario's."""
    document = yaml.safe_load(COMPOSE_FILE.read_text())
    settings = {**os.environ, **environment}
    return [
        Target(scenario=SCENARIO, **{key: interpolate(value, settings) for key, value in entry.items()})
        for entry in document["x-targets"]
    ]


# --- The scenario: one target alone, its captured SQL, Postgres's own queries ---------------------------------


def psql(running: RunningScenario, sql: str) -> str:
    return query(running, DATABASE, sql)


def only(running: RunningScenario, target: Target, services: list[str], timeout: float = 120) -> None:
    """The target's service running and healthy, every other app service stopped."""
    others = [service for service in services if service != target.service]
    if others:
        running.compose("stop", "--timeout", "10", *others)
    # up, not start: a setting changed since (READS_END_WITH) recreates the container with it.
    running.compose("up", "--detach", "--no-deps", target.service)
    deadline = time.monotonic() + timeout
    while running.health().get(target.service) != "healthy":
        if time.monotonic() > deadline:
            raise ScenarioError(f"{target.service} not healthy after {timeout:.0f} s:\n{running.logs()}")
        time.sleep(0.5)


def scripts(running: RunningScenario, service: str, scale: int, token: str, reads_end_with: str) -> dict[str, str]:
    """The pgbench scripts of this target: the fast read, the list (one template, a variable per offset) and
    the write. Captured at two values of each input, which must give the same SQL; the reads end as the app's do."""
    end = reads_end_with.upper()
    ids = (max(1, scale // 3), max(2, scale // 2 + 7))  # far from the page size and from each other
    captured = [(i, capture(running, service, "GET", f"/author/{i}")) for i in ids]
    reads = pgbench.in_transaction(captured[0][1], pgbench.template(captured, "id"), end)
    offsets = (PAGE * 3, PAGE * 7)
    captured = [(o, capture(running, service, "GET", f"/author?limit={PAGE}&offset={o}")) for o in offsets]
    pages = pgbench.in_transaction(captured[0][1], pgbench.template(captured, "offset"), end)
    body = json.dumps(POST_BODY).replace("@@MARKER@@", f"{MARKER_PREFIX}{token}-pgbench")
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


def verify(target: Target, load: BookstoreLoad, scale: int) -> str | None:
    """Why this load's requests cannot be trusted on this target, or None: the data is derived from the row
    number, so each answer is known."""
    url = target.url.rstrip("/")
    try:
        if load.offset_share is None:
            author_id = max(1, scale // 4)
            answer = requests.get(f"{url}/author/{author_id}", timeout=30)
            if answer.status_code != 200 or answer.json().get("name") != f"Author {author_id}":
                return f"GET /author/{author_id}: {answer.status_code} {answer.text[:100]!r}"
        else:
            offset = min(load.first_offset(scale), max(0, scale - PAGE))
            answer = requests.get(f"{url}/author", params={"limit": PAGE, "offset": offset}, timeout=60)
            ids = [author.get("id") for author in answer.json()] if answer.status_code == 200 else None
            if ids != list(range(offset + 1, offset + PAGE + 1)):
                return f"GET /author?offset={offset}: {answer.status_code} {answer.text[:100]!r}"
        if load.writes_per_thousand:
            body = json.loads(json.dumps(POST_BODY).replace("@@MARKER@@", f"{MARKER_PREFIX}verify"))
            answer = requests.post(f"{url}/author", json=body, timeout=30)
            if answer.status_code != 201 or answer.json().get("name") != body["name"]:
                return f"POST /author: {answer.status_code} {answer.text[:100]!r}"
    except (requests.RequestException, ValueError) as error:
        return f"no valid answer: {error.__class__.__name__}: {str(error)[:100]}"
    return None


# --- One measurement: the target under wrk, then the database alone under pgbench ----------------------------


def measure_app(
    running: RunningScenario, target: Target, load: BookstoreLoad, scale: int, seconds: int, token: str
) -> dict:
    containers = running.container_ids()
    app, postgres = containers[target.service], containers["postgres"]
    command = wrk_command(running.address(target.service), running.network(), load, scale, seconds, token)
    before = {name: container_cpu_seconds(container) for name, container in (("app", app), ("pg", postgres))}
    sampler = PostgresSampler(running.main_pid(target.service), running.main_pid("postgres"), postgres)
    with sampler:
        finished = subprocess.run(command, capture_output=True, text=True)
    after = {name: container_cpu_seconds(container) for name, container in (("app", app), ("pg", postgres))}
    output = finished.stdout + finished.stderr
    record: dict = {"command": " ".join(command)}
    try:
        result, counts = wrk.parse_wrk(output), parse_counts(output)
    except ValueError as error:
        return record | {"problem": f"wrk did not finish: {error}"}
    statuses = {int(status): count for status, count in counts["statuses"].items()}
    answered = sum(statuses.values()) or 1
    usage = sampler.usage
    record |= {
        "rps": result.rps,
        "complete": result.complete,
        "p50_ms": result.p50_ms,
        "p99_ms": result.p99_ms,
        "failed": result.failed,
        "failure_kinds": result.failure_kinds,
        "non2xx": result.non2xx,
        "statuses": {str(status): count for status, count in sorted(statuses.items())},
        "status_503": statuses.get(503, 0),
        "writes_acknowledged": counts["acknowledged_writes"],
        # The server's processes, from /proc: docker's healthcheck probes run in the container but are not the
        # server's work (a Python interpreter started every second).
        "app_cpu_ms_per_request": round(1000 * usage.cpu_seconds / answered, 3),
        "pg_cpu_ms_per_request": _per(after["pg"], before["pg"], answered),
        "app_container_cpu_ms_per_request": _per(after["app"], before["app"], answered),
        "app_rss_mb_peak": usage.rss_mb_peak,
        "app_threads_peak": usage.threads_peak,
        "pg_memory_mb_peak": sampler.postgres_memory_mb_peak,
        "pg_sessions_peak": usage.pg_sessions_peak,
        "pg_busy_peak": sampler.busy_peak,
        "machine_busy": usage.machine_busy,
    }
    record |= not_sampled(running, target, record)
    problems = []
    if result.failed or result.non2xx:
        kinds = ", ".join(f"{kind} {count}" for kind, count in result.failure_kinds.items() if count)
        problems.append(f"wrk counted {result.failed} failures ({kinds or 'none'}) and {result.non2xx} non-2xx")
    unexpected = {status: count for status, count in statuses.items() if status not in (200, 201)}
    if unexpected and not result.non2xx:
        problems.append(f"answers other than 200 and 201: {unexpected}")
    record["problem"] = "; ".join(problems) or None
    return record


# The figures read from this machine's /proc (PostgresSampler): wrong, not merely missing, where the engine's
# processes are not this machine's; the cgroup's figures are read through the engine there (bench/containers/cgroup.py).
FROM_PROC = ("app_cpu_ms_per_request", "app_rss_mb_peak", "app_threads_peak", "pg_sessions_peak", "pg_busy_peak")


def not_sampled(running: RunningScenario, target: Target, record: dict) -> dict:
    """The figures that could not be read, emptied, and why (`not_sampled`): none, on a Linux Docker Engine."""
    reasons, emptied = [], {}
    if not running.sees_processes(target.service):
        emptied = dict.fromkeys(FROM_PROC)
        reasons.append("the app's and Postgres's processes: this machine's /proc does not show the engine's")
    unread = [key for key in ("pg_cpu_ms_per_request", "pg_memory_mb_peak") if record.get(key) is None]
    if unread:
        reasons.append(f"{' and '.join(unread)}: Postgres's {cgroup.UNREAD}")
    return emptied | ({"not_sampled": "; ".join(reasons)} if reasons else {})


def _per(after: float | None, before: float | None, count: int) -> float | None:
    return None if after is None or before is None else round(1000 * (after - before) / max(1, count), 3)


def measure_database(
    running: RunningScenario, load: BookstoreLoad, clients: int, seconds: int, script_dir: Path, protocol: str
) -> dict:
    postgres = running.container_ids()["postgres"]
    inside = pgbench.command(
        {f"/scripts/{name}": weight for name, weight in weights(load).items()}, clients, seconds, DATABASE, protocol
    )
    password = running.environment.get("POSTGRES_PASSWORD") or "playground"
    command = pgbench.container_command(inside, running.network(), script_dir, password, POSTGRES_IMAGE)
    before = container_cpu_seconds(postgres)
    sampler = PostgresSampler(None, running.main_pid("postgres"), postgres)
    with sampler:
        finished = subprocess.run(command, capture_output=True, text=True)
    after = container_cpu_seconds(postgres)
    record: dict = {"pgbench_command": pgbench.shown(command)}
    try:
        result = pgbench.parse(finished.stdout + finished.stderr)
    except ValueError as error:
        return record | {"pgbench_problem": str(error)}
    return record | {
        "pgbench_tps": round(result.tps, 1),
        "pgbench_transactions": result.transactions,
        "pgbench_failed": result.failed,
        "pgbench_latency_ms": result.latency_ms,
        "pgbench_pg_cpu_ms_per_transaction": _per(after, before, result.transactions),
        "pgbench_busy_peak": sampler.busy_peak,
        "pgbench_pg_memory_mb_peak": sampler.postgres_memory_mb_peak,
        "pgbench_problem": f"{result.failed} transactions failed" if result.failed else None,
    }


def count_and_remove_writes(running: RunningScenario, token: str) -> int:
    """How many authors this load's writes left, then none: the data stays SCALE authors for the next run."""
    found = int(psql(running, f"SELECT count(*) FROM authors WHERE name LIKE '{MARKER_PREFIX}{token}-%'"))
    psql(running, f"DELETE FROM authors WHERE name LIKE '{MARKER_PREFIX}%'")
    return found


def describe(target: Target, load: BookstoreLoad, scale: int, seconds: int, reads_end_with: str) -> dict:
    described = target.describe()
    if reads_end_with != DEFAULT_READS_END:  # named after what ran, as make bench names a variant
        described["target"] = f"{target.name} READS_END_WITH={reads_end_with}"
    return {
        **described,
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


def run_target(
    running: RunningScenario,
    target: Target,
    loads: list[BookstoreLoad],
    scale: int,
    seconds: int,
    progress: Progress,
    services: list[str],
    reads_end_with: str,
) -> Iterator[dict]:
    """This target alone, its SQL captured, then each load: verified, warmed, measured, and the database alone."""
    label = f"{SCENARIO} / {target.name}"
    progress.show(label, "starting it alone, capturing its SQL")
    token = secrets.token_hex(4)
    try:
        only(running, target, services)
        texts = scripts(running, target.service, scale, token, reads_end_with)
    except (ScenarioError, pgbench.TemplateError) as error:
        for load in loads:
            problem = f"not measured: {str(error).splitlines()[0][:300]}"
            yield describe(target, load, scale, seconds, reads_end_with) | {"verified": False, "problem": problem}
        return
    with tempfile.TemporaryDirectory(prefix="bookstore-pgbench-") as directory:
        script_dir = Path(directory)
        script_dir.chmod(0o755)  # pgbench reads them as its image's user
        for name, text in texts.items():
            (script_dir / name).write_text(text)
        for number, load in enumerate(loads):
            record = describe(target, load, scale, seconds, reads_end_with)
            record["pgbench_scripts"] = {n: texts[n] for n in weights(load)}
            problem = verify(target, load, scale)
            duration = round(seconds * load.duration_factor)
            record |= {"verified": problem is None, "problem": problem, "seconds": duration}
            if problem is None:
                # A short run (a test's) warms in proportion.
                warming = min(FIRST_WARM_SECONDS, max(WARM_SECONDS, 2 * seconds)) if number == 0 else WARM_SECONDS
                progress.show(label, f"{load.name}: warm-up {warming} s, then wrk -c {load.clients} {duration} s")
                where = running.address(target.service)
                warm = wrk_command(where, running.network(), load, scale, warming, f"{MARKER_PREFIX}warm")
                subprocess.run(warm, capture_output=True)
                postgres_pid = running.main_pid("postgres")
                settle(postgres_pid)
                record["cpu_probe_s_before"] = host_cpu_probe()
                load_token = f"{MARKER_PREFIX}{token}-{load.name}"
                record |= measure_app(running, target, load, scale, duration, load_token)
                record["pg_busy_s_after_wrk"] = settle(postgres_pid)
                progress.show(label, f"{load.name}: pgbench -c {record['db_clients']} {duration} s")
                protocol = pgbench.PROTOCOL[reads_end_with]
                record |= measure_database(running, load, record["db_clients"], duration, script_dir, protocol)
                record["cpu_probe_s_after"] = host_cpu_probe()
                if load.writes_per_thousand:
                    found = count_and_remove_writes(running, f"{token}-{load.name}")
                    acknowledged = record.get("writes_acknowledged", 0)
                    # A write answered 201 must be there; a row without its 201 was in flight when wrk stopped.
                    record |= {
                        "writes_found": found,
                        "writes_lost": max(0, acknowledged - found),
                        "writes_unacknowledged": max(0, found - acknowledged),
                    }
                    if record["writes_lost"] and not record["problem"]:
                        record["problem"] = f"{record['writes_lost']} acknowledged writes are not in the database"
                if record.get("pgbench_problem") and not record["problem"]:
                    record["problem"] = f"pgbench: {record['pgbench_problem']}"
                if record.get("rps") and record.get("pgbench_tps"):
                    record["vs_database"] = round(record["rps"] / record["pgbench_tps"], 3)
            yield record
        # The capture's own write too, which every target makes (scripts()): the data stays SCALE authors.
        count_and_remove_writes(running, token)


def database_facts(running: RunningScenario) -> dict:
    authors = psql(running, "SELECT count(*) FROM authors")
    books = psql(running, "SELECT count(*) FROM books")
    size = psql(running, f"SELECT pg_size_pretty(pg_database_size('{DATABASE}'))")
    return {"authors": int(authors), "books": int(books), "size": size}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.modes.bookstore", description=__doc__)
    parser.add_argument("--scale", type=int, default=DEFAULT_SCALE, help="authors in the data (its own volume)")
    parser.add_argument("--targets", nargs="*", metavar="TARGET", help="default: every target of bookstore.yml")
    parser.add_argument("--loads", nargs="*", default=list(BY_NAME), choices=BY_NAME, metavar="LOAD")
    parser.add_argument("--seconds", type=int, default=SECONDS, help="of wrk, and of pgbench, per measurement")
    parser.add_argument(
        "--reads-end-with", nargs="+", choices=pgbench.PROTOCOL, metavar="ENDING",
        default=(os.environ.get("READS_END_WITH") or DEFAULT_READS_END).split(),
        help="how the app's reads end (rollback, commit, or both: each target measured with each in turn), and so"
        " whether its statements stay prepared (docs/bookstore.md)",
    )  # fmt: skip
    parser.add_argument("--out", type=Path)
    arguments = sys.argv[1:] if argv is None else argv
    args = parser.parse_args(arguments)
    environment = {"BOOKSTORE_SCALE": str(args.scale), "READS_END_WITH": args.reads_end_with[0]}
    every = bookstore_targets(environment)
    unknown = set(args.targets or []) - {target.name for target in every}
    if unknown:
        raise SystemExit(f"unknown targets {sorted(unknown)}; choose from {[t.name for t in every]}")
    targets = [target for target in every if not args.targets or target.name in args.targets]
    loads = [BY_NAME[name] for name in args.loads]
    results = ResultSet("python -m bench.modes.bookstore", "bookstore", arguments, args.out, suffix="-bookstore")
    choose_client("container", "wrk")  # builds wrk's image
    if not shutil.which("docker"):
        raise SystemExit("make bookstore needs Docker")
    about = results.metadata
    about |= {"scale": args.scale, "seconds": args.seconds, "loads": [load.__dict__ for load in loads]}
    about["reads_end_with"] = args.reads_end_with
    progress = Progress(len(targets) * len(loads) * len(args.reads_end_with))

    def keep(record: dict) -> None:
        record["ok"] = record["verified"] and not record["problem"]
        results.add(record)
        progress.done += 1
        share = f", {record['vs_database']:.2f} of the database alone" if record.get("vs_database") else ""
        verdict = "ok" if record["ok"] else f"NOT OK: {record['problem']}"
        print(f"    {record.get('rps', '-')} requests/s{share}, {verdict}", flush=True)

    progress.show(SCENARIO, f"building and starting, SCALE={args.scale} (a new size generates its data first)")
    try:
        with BookstoreScenario(environment, [target.service for target in targets]) as running:
            about["packages"] |= image_packages(running)
            about["database"] = database_facts(running)
            services = [target.service for target in every]  # up may start one the measured one depends on
            for target in targets:
                for ending in args.reads_end_with:  # side by side in time: the machine's speed moves
                    running.environment["READS_END_WITH"] = ending
                    for record in run_target(
                        running, target, loads, args.scale, args.seconds, progress, services, ending
                    ):
                        keep(record)
    except ScenarioError as error:
        for target in targets:
            for ending in args.reads_end_with:
                for load in loads:
                    problem = f"did not start: {error.in_one_line()}"
                    keep(
                        describe(target, load, args.scale, args.seconds, ending)
                        | {"verified": False, "problem": problem}
                    )
    failures = sorted({f"{r['target']}/{r['load']}" for r in results.document.results if not r["ok"]})
    return results.finish_and_say(failures, "results.json, results.md, charts, index.html")


if __name__ == "__main__":
    sys.exit(main())
