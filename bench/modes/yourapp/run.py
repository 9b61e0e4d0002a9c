"""`make yourapp APP=path/to/app REQUESTS=requests.txt`: the reader's own Flask app served every way the playground
measures (yourapp/compose.yml's x-ways), each way verified against Flask's development server before it is loaded,
then its requests file's mix at a few client counts; what each request type costs alone and where its CPU goes; the C
libraries gevent cannot patch and the greenlets gevent's monitor caught blocking; and the answer, computed from those
figures (docs/yourapp.md).

Bad input is one line, never a traceback: the file and line of a bad request, the requirement that does not install,
the way that does not start (its last log line: the app's import error, the set-up's failure); the other ways still
run where they can."""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tarfile
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path

from bench.containers.roles import UNSTEADY_FACTOR
from bench.containers.scenarios import ROOT
from bench.loadgen.vegeta_targets import RequestsFileError, RequestSpec, labels, read_requests, with_session
from bench.measure import profile
from bench.measure.host_probe import host_cpu_probe
from bench.measure.resultset import Progress, ResultSet
from bench.measure.scenario_start import ScenarioStart
from bench.modes.yourapp import render as page
from bench.modes.yourapp.checks import (
    AnswerParts,
    Expected,
    blocked_greenlets,
    expected_answers,
    first_difference,
    reference_round,
)
from bench.modes.yourapp.database import Database, postgres_service, start_counting
from bench.modes.yourapp.image import (
    AppError,
    AppSource,
    app_source,
    build_app_image,
    last_line,
    pins_said,
    server_versions,
)
from bench.modes.yourapp.load import MixResult, mix_load, request_cost, service_host
from bench.modes.yourapp.record import YourAppResult, outcome
from bench.modes.yourapp.session import Session, errors_in_log, locked_in_log, log_in
from bench.modes.yourapp.ways import RunningWay, Way, choose
from bench.options import Option, Options
from bench.results.records import CpuProbe

CACHE = ROOT / ".cache" / "yourapp"
EXAMPLES_DIR = ROOT / "yourapp" / "examples"


@dataclass(frozen=True)
class Example:
    """An example app, fetched from a source distribution on PyPI (the folder `inside` its archive), with what the
    playground keeps for it in yourapp/examples/<name>/: its requests, its requirements, any services, and the files
    a reader would add to deploy it (copied into the app's folder)."""

    name: str
    distribution: str  # the source distribution, pinned: "flask==3.1.3"
    inside: str  # the app's folder in the archive, below its top folder ("" for the top folder itself)
    callable: str
    setup: str
    health: str = "/"
    services: str | None = None  # a Compose file of yourapp/examples/<name>/
    added: tuple[str, ...] = ()  # files of yourapp/examples/<name>/ copied into the app's folder

    @property
    def files(self) -> Path:
        return EXAMPLES_DIR / self.name

    @property
    def requests(self) -> Path:
        return self.files / "requests.txt"

    @property
    def requirements(self) -> Path:
        return self.files / "requirements.txt"


EXAMPLES = {
    example.name: example
    for example in (
        # flaskr, Flask's tutorial app, on SQLite. Its set-up loads its own test data (tests/data.sql): the user
        # `test`, with a password hashed by PBKDF2, and one post. `flask init-db`, not `flask --app flaskr init-db`:
        # the image's FLASK_APP names the app on every Flask.
        Example(
            name="flaskr",
            distribution="flask==3.1.3",
            inside="examples/tutorial",
            callable="flaskr:create_app()",
            setup='flask init-db && python -c "import sqlite3;'
            " c = sqlite3.connect('instance/flaskr.sqlite'); c.executescript(open('tests/data.sql').read());"
            ' c.commit()"',
        ),
        # I Hate Money, a shared budget manager, on Postgres: Flask-SQLAlchemy, Alembic's migrations (run by the app
        # as it starts), Flask-WTF forms and a REST API with basic auth. Its set-up runs the migrations and makes its
        # demo project (three members, three bills, the password `demo` hashed by scrypt).
        Example(
            name="ihatemoney",
            distribution="ihatemoney==7.2.1",
            inside="",
            callable="ihatemoney.run:create_app()",
            setup='python -c "from ihatemoney.run import create_app; from ihatemoney.models import Project;'
            ' app = create_app(); app.app_context().push(); Project.create_demo_project()"',
            health="/healthcheck",
            services="services.yml",
            added=("ihatemoney.cfg",),
        ),
    )
}
COSTS_ON = ("gunicorn-threads", "granian", "waitress")  # a sync way: each request's time is its own
# A write's cost alone: at most this many, each one more row for the costs way's loads to read than the others get.
WRITES_ALONE = 200
REQUEST_FIELDS = ("line", "name", "weight", "expect", "login", "lookup")  # each request's, in the set's metadata
# The reference's fresh containers, each after its own SETUP: what one set-up writes differently from the next (a
# user's last_seen, a random id, a salt) differs between them, and is masked as what changes between two askings is.
REFERENCE_SETUPS = 2
# How the reference runs (yourapp/compose.yml's devserver), for the record and the run's output.
REFERENCE_HOW = (
    "Werkzeug's development server (what `flask run` starts), threaded, serving the callable as every way imports"
    " it (yourapp_entry:application): no .flaskenv or .env read, no reloader, no debugger, debug as the app and its"
    f" environment set it, as in every way; each request asked twice in each of {REFERENCE_SETUPS} fresh containers,"
    " SETUP run in each"
)
# The line the devserver's command prints before it serves: whether the app it serves is in debug mode (True, False;
# None where the callable is no Flask app, a middleware around one).
_REFERENCE_DEBUG = re.compile(r"^yourapp reference: debug (\S+)", re.MULTILINE)


def fetch(example: Example) -> Path:
    """The example's folder from its source distribution on PyPI, unpacked once under .cache/, with the files the
    playground adds to it."""
    project, version = example.distribution.split("==")
    top = f"{project}-{version}"
    folder = CACHE / top / example.name
    if not folder.is_dir():
        CACHE.mkdir(parents=True, exist_ok=True)
        download = [sys.executable, "-m", "pip", "download", "--quiet", "--no-binary", ":all:", "--no-deps"]
        done = subprocess.run([*download, example.distribution, "--dest", str(CACHE)], capture_output=True, text=True)
        if done.returncode != 0:
            raise AppError(f"fetching {example.distribution}'s source distribution failed: {last_line(done.stderr)}")
        prefix = f"{top}/{example.inside}/".replace("//", "/")
        with tarfile.open(CACHE / f"{top}.tar.gz") as archive:
            members = [member for member in archive.getmembers() if member.name.startswith(prefix)]
            for member in members:
                member.name = member.name.removeprefix(prefix)
            archive.extractall(folder, members=[m for m in members if m.name], filter="data")
    for name in example.added:
        (folder / name).write_bytes((example.files / name).read_bytes())
    return folder


OPTIONS = Options(
    "yourapp",
    "make yourapp",
    (
        Option("--example", "EXAMPLE", "an example app instead of --app", {"choices": sorted(EXAMPLES)}),
        Option("--app", "APP", "the app's folder", {"type": Path}),
        Option("--requests", "REQUESTS", "the requests file, in vegeta's HTTP targets format", {"type": Path}),
        Option("--callable", "CALLABLE", "module:app or module:create_app() (default app:app)"),
        Option("--setup", "SETUP", "a shell command run in each way's container first"),
        Option("--services", "SERVICES", "a Compose file of the services the app needs", {"type": Path}),
        Option("--requirements", "REQUIREMENTS", "a requirements file (default the app's own)", {"type": Path}),
        Option("--python", "PYTHON_VERSION", "the Python version of the images", {"default": "3.14"}),
        Option("--ways", "WAYS", "the ways to run, comma-separated (default: all)"),
        Option("--clients", "CLIENTS", "the client counts of the sweep", {"default": "10 50 200"}),
        Option("--repeat", "REPEAT", "loads of each way at each client count", {"type": int, "default": 1}),
        Option("--seconds", "SECONDS", "each load's length", {"type": float, "default": 10.0}),
        Option("--health", "HEALTH", "the path a way is up on (any answer but a 5xx; default /)"),
        Option.out("-yourapp-<app>"),
        Option("--port", None, "where a way listens on 127.0.0.1", {"type": int, "default": 3000}),
        Option("--nginx-port", None, "where Nginx listens, in front of a way", {"type": int, "default": 8080}),
    ),
)


def arguments(argv: list[str] | None = None) -> argparse.Namespace:
    parser = OPTIONS.parser(__doc__.split("\n\n")[0])
    given = OPTIONS.arguments(argv)
    found = parser.parse_args(given)
    found.argv = given
    if found.example:
        example = EXAMPLES[found.example]
        found.callable = found.callable or example.callable
        found.setup = found.setup or example.setup
        found.requests = found.requests or example.requests
        found.requirements = found.requirements or example.requirements
        found.health = found.health or example.health
        if example.services and not found.services:
            found.services = example.files / example.services
    elif not found.app or not found.requests:
        parser.error("APP= (the app's folder) and REQUESTS= (its requests file) are needed, or EXAMPLE=flaskr")
    found.health = found.health or "/"
    return found


def cpu_probe(before: float, after: float) -> CpuProbe:
    return CpuProbe.judged({"host": {"before": before, "after": after}}, UNSTEADY_FACTOR)


class Run:
    """One run of the mode: the app, its requests, the result set, and what was learnt along the way."""

    def __init__(
        self, options: argparse.Namespace, source: AppSource, requests: list[RequestSpec], ways: list[Way]
    ) -> None:
        self.options, self.source, self.requests, self.ways = options, source, requests, ways
        self.mix = with_session(requests, None)  # all but the file's # login; each container adds its own cookies
        self.clients = [int(value) for value in options.clients.split()]
        self.environment = {
            "YOURAPP_IMAGE": source.image,
            "YOURAPP_CALLABLE": options.callable or "app:app",
            "YOURAPP_SETUP": options.setup or "true",
            "YOURAPP_HEALTH": options.health,
            "YOURAPP_PORT": str(options.port),
            "YOURAPP_NGINX_PORT": str(options.nginx_port),
        }
        self.results = ResultSet("make yourapp", "yourapp", options.argv, options.out, suffix=f"-yourapp-{source.name}")
        self.failures: list[str] = []
        self.expected: list[Expected] = []
        # Each request type's cost on the first of COSTS_ON among the ways asked for, else the first.
        served = [way.name for way in self.ways if not way.reference]
        self.costs_way = next((name for name in COSTS_ON if name in served), served[0] if served else None)

    def did_not_start(self, way: Way, problem: str) -> None:
        print(f"  {way.name} {problem}", flush=True)
        self.failures.append(f"{way.name} {problem.split(':')[0]}")
        self.results.add(YourAppResult(**way.record_fields(), verified=False, ok=False, clients=0,
                                       server_command=way.command, problem=problem))  # fmt: skip

    def reference(self, way: Way) -> bool:
        """The expected answers: the development server in REFERENCE_SETUPS fresh containers, each request asked
        twice in each; False, said and recorded, where it does not start or does not answer as the file expects."""
        rounds: list[list[tuple[AnswerParts, AnswerParts]]] = []
        debug: bool | None = None  # as the served app said, where it is a Flask app
        for setup in range(1, REFERENCE_SETUPS + 1):
            print(f"  the development server, set-up {setup} of {REFERENCE_SETUPS}", flush=True)
            with ScenarioStart(self.results.metadata["packages"]) as start:
                running = start.up(RunningWay(way, self.environment, self.options.services))
                session = self.log_in(running)  # the file's # login, once in each container
                if session is None:
                    return False
                rounds.append(reference_round(running.published_port, session.mix, service_host(running)))
                said = _REFERENCE_DEBUG.search(running.app_logs())
                debug = {"True": True, "False": False}.get(said[1]) if said else debug
            if start.problem:
                self.did_not_start(way, start.problem)
                return False
        self.results.metadata["reference"] = {"way": way.name, "command": way.command, "how": REFERENCE_HOW,
                                              "setups": REFERENCE_SETUPS, "debug": debug}  # fmt: skip
        try:
            self.expected = expected_answers(self.mix, rounds)
        except ValueError as error:
            print(f"{self.options.requests}: {error}", flush=True)
            self.failures.append(f"{way.name}: {error}")
            return False
        masked = sum(expected.masked for expected in self.expected)
        print(f"  the development server answered all {len(self.requests)} requests; {masked} parts masked", flush=True)
        if debug:
            print("  the app is in debug mode (its config or FLASK_DEBUG in its environment), in every way", flush=True)
        return True

    def measure(self, way: Way, progress: Progress) -> None:
        with ScenarioStart(self.results.metadata["packages"]) as start:
            running = start.up(RunningWay(way, self.environment, self.options.services))
            session = self.log_in(running)
            if session is None:
                return
            expected = [replace(e, request=mine) for e, mine in zip(self.expected, session.mix, strict=True)]
            difference = first_difference(running.published_port, expected, service_host(running))
            if difference:
                self.did_not_start(way, f"differs from the development server: {difference}")
                return
            database = self.database(running)
            if way.name == self.costs_way:
                self.request_costs(running, session.mix, database)
            for clients in self.clients:
                for repeat in range(1, self.options.repeat + 1):
                    progress.show(way.name, f"{clients} clients, repeat {repeat}")
                    self.load(running, session, clients, repeat, database)
                    progress.done += 1
        if start.problem:
            self.did_not_start(way, start.problem)

    def log_in(self, running: RunningWay) -> Session | None:
        """The file's # login sent once to this container: the session whose cookies the requests after the login
        carry, in the verification and every load. None, said and recorded, where it did not log in: on the
        development server the file's or the app's problem, on a way the way's (left out)."""
        try:
            return log_in(running.published_port, self.requests, service_host(running))
        except ValueError as error:
            if running.way.reference:
                print(f"{self.options.requests}: {error}", flush=True)
                self.failures.append(f"{running.way.name}: {error}")
            else:
                self.did_not_start(running.way, f"did not log in: {error}")
            return None

    def database(self, running: RunningWay) -> Database | None:
        """The reader's Postgres, where the services file has one, counting statements where it can; said once."""
        database = postgres_service(self.options.services)
        if database is None:
            return None
        database = start_counting(running, database)
        if "database" not in self.results.metadata:
            self.results.metadata["database"] = {"service": database.service,
                                                 "counts_statements": database.counts_statements}  # fmt: skip
            if not database.counts_statements:
                print(f"  {database.service}: Postgres without pg_stat_statements: its CPU is measured, not its "
                      "statements (docs/yourapp.md says how)", flush=True)  # fmt: skip
        return database

    def request_costs(self, running: RunningWay, mix: list[RequestSpec], database: Database | None) -> None:
        print(f"  what each request type costs alone, on {running.way.name}", flush=True)
        costs = {}
        for label, request in zip(labels(mix).values(), mix, strict=True):
            alone = request.marked(f"alone-{request.line}")  # a write: no load's mark
            cost = request_cost(running, alone, most=WRITES_ALONE if request.lookup else None, database=database)
            costs[label] = {"weight": request.weight, **vars(cost)}
        self.results.metadata["request_costs"] = costs
        self.results.metadata["request_costs_on"] = running.way.name
        self.results.save()

    def load(self, running: RunningWay, session: Session, clients: int, repeat: int, database: Database | None) -> None:
        way = running.way
        before = host_cpu_probe()
        started = datetime.now(UTC).isoformat()  # gevent's monitor reports from this load on, not the earlier ones'
        record = YourAppResult(
            **way.record_fields(), verified=True, clients=clients, repeat=repeat, seconds=self.options.seconds,
            server_command=way.command, ok=False,
        )  # fmt: skip
        statuses = {expected.request.line: expected.status for expected in self.expected}  # the file's or devserver's
        try:
            result = mix_load(running, session, statuses, clients, self.options.seconds, database)
        except (ValueError, subprocess.SubprocessError) as error:
            self.results.add(replace(record, problem=str(error).splitlines()[0]))
            self.failures.append(f"{way.name} at {clients}")
            return
        probe = cpu_probe(before, host_cpu_probe())
        state = running.health().get("app", "gone")
        problem = None if state == "healthy" else f"the app's container is {state} after the load"
        logs = running.app_logs(since=started)
        if way.mode == "gevent":  # what gevent's monitor reported, on a gevent way
            blocked = blocked_greenlets(logs)
            record = replace(
                record, blocked_reports=blocked.reports, blocked_where=blocked.where, blocked_stack=blocked.stack
            )
        record = replace(
            record.with_measured(result), cpu_probe=probe, locked=locked_in_log(logs), log_errors=errors_in_log(logs),
            problem=problem or load_problem(result),
        ).judged()  # fmt: skip
        self.results.add(record)
        print(f"    {result.rps} requests/s, P99 {result.p99_ms} ms, {result.errors} errors", flush=True)


def load_problem(result: MixResult) -> str | None:
    """What went wrong in a load, in one line: each request without its expected status and what it got instead;
    the writes acknowledged and not found, or not looked up."""
    said = []
    if result.errors:
        missed = "; ".join(f"{label}: {outcome(entry)}" for label, entry in result.per_type.items() if entry["errors"])
        said.append(f"{result.errors} of {result.requests} requests without their expected status ({missed})")
    for label, entry in result.writes.items():
        if entry.get("problem"):
            said.append(f"{label}: writes not looked up: {entry['problem']}")
        elif entry.get("lost"):
            said.append(f"{label}: {entry['lost']} of {entry['acknowledged']} acknowledged writes not found")
    return "; ".join(said) or None


def run(options: argparse.Namespace) -> int:
    ways = choose(options.ways.split(",") if options.ways else None)  # an unknown name before minutes of building
    try:
        requests = read_requests(options.requests)
        folder = fetch(EXAMPLES[options.example]) if options.example else options.app
        source = app_source(folder, options.requirements, options.python)
    except (RequestsFileError, AppError) as error:
        print(error, file=sys.stderr)
        return 2
    for name, fix in source.unpatchable.items():
        print(f"{name}: gevent cannot patch its waits; the fix: {fix}", flush=True)
    replaced = pins_said(source)
    if replaced:
        print(replaced, flush=True)
    print(f"building {source.image} (its requirements in one layer every way shares)", flush=True)
    try:
        build_app_image(source)
        servers, also_replaced = server_versions(source)  # the versions every way runs, whatever the pins said
        if also_replaced:
            print(also_replaced, flush=True)
        profile.build_image()
    except AppError as error:
        print(error, file=sys.stderr)
        return 1
    this = Run(options, source, requests, ways)
    this.results.metadata |= {
        "app": source.name,
        "callable": this.environment["YOURAPP_CALLABLE"],
        "setup": options.setup,
        "requirements": list(source.requirements),
        "python": source.python,
        "requests": [{key: getattr(r, key) for key in REQUEST_FIELDS} for r in requests],
        "unpatchable": source.unpatchable,
        "servers": servers,
        "clients": this.clients,
        "repeat": options.repeat,
    }
    loaded = [way for way in ways if not way.reference]
    progress = Progress(len(loaded) * len(this.clients) * options.repeat)
    print(f"the reference, the answers every way must give: {REFERENCE_HOW}", flush=True)
    if not this.reference(ways[0]):
        this.results.finish()
        return this.results.say(this.failures, "results.json")
    for way in loaded:
        this.measure(way, progress)
    page.render(this.results.out, this.results.finish())
    return this.results.say(this.failures, "results.json, results.md")


def main(argv: list[str] | None = None) -> int:
    options = arguments(argv)
    return run(options)


if __name__ == "__main__":
    sys.exit(main())
