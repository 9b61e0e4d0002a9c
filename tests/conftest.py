"""Fixtures shared by the tests: a real slow_api on a free loopback port, each scenario running in Docker,
and small HTTP load clients."""

from __future__ import annotations

import contextlib
import functools
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import requests

from bench.containers import doctor
from bench.containers.compose import RunningScenario
from bench.containers.scenarios import REFERENCE, ROOT, SCENARIOS
from bench.measure.client import choose_client
from bench.results import store
from tests import engines

# `make` as a test runs it: the harness on this test's interpreter (the venv's, as the Makefile's PYTHON); `-o` keeps
# make from making a venv of its own where pytest runs from another. Under `make test` it is a make within make, which
# says which directory it enters and leaves unless told not to (GNU make 4.3's -s does not).
MAKE = ["make", "-s", "--no-print-directory", "-o", ".venv/.requirements-installed", f"PYTHON={sys.executable}"]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_for_container(container: str, ready: Callable[[], bool], what: str, timeout: float = 30) -> None:
    """Until `ready()` says the container's server answers; past `timeout`, an error with the end of its log."""
    deadline = time.monotonic() + timeout
    while not ready():
        if time.monotonic() > deadline:
            logs = subprocess.run(["docker", "logs", container], capture_output=True, text=True)
            raise RuntimeError(f"{what} not ready in {timeout:g} s: {logs.stderr[-500:]}")
        time.sleep(0.2)


@contextlib.contextmanager
def tool_beside_a_server(
    tool: str, image: str, command: list[str], port: int, mounts: tuple[Path, ...] = ()
) -> Iterator[tuple[list[str], str]]:
    """A load generator (ab, hey, wrk) in its container (bench/loadgen/Dockerfile-<tool>) and a small server
    (`command` in `image`, listening on `port`) in another, on a network of their own, these folders mounted where
    they are in both: for a test where the tool is not on this machine. On the engine's network, not this machine's
    loopback: under Docker Desktop that is its VM's. Yields the tool's command prefix and the server's URL. Skips, in
    one line, only where no Docker engine answers."""
    engine = subprocess.run(["docker", "info"], capture_output=True) if shutil.which("docker") else None
    if engine is None or engine.returncode != 0:
        pytest.skip(f"{tool} is not on this machine and no Docker engine answers to run its container")
    tool_image = choose_client("container", tool).loadgen.image
    name = f"tool-test-{secrets.token_hex(4)}"  # wrk's URL parser refuses an "_" in a host name
    volumes = [option for folder in mounts for option in ("--volume", f"{folder}:{folder}")]
    subprocess.run(["docker", "network", "create", name], check=True, capture_output=True)
    try:
        start = ["docker", "run", "--detach", "--rm", "--name", name, "--network", name, *volumes, image, *command]
        subprocess.run(start, check=True, capture_output=True)
        listening = ["docker", "exec", name, "python", "-c",
                     f"import socket; socket.create_connection(('127.0.0.1', {port}), timeout=1)"]  # fmt: skip
        ready = lambda: subprocess.run(listening, capture_output=True).returncode == 0  # noqa: E731
        wait_for_container(name, ready, f"{command} in {image}, listening on {port},")
        yield ["docker", "run", "--rm", "--network", name, *volumes, tool_image, tool], f"http://{name}:{port}/"
    finally:
        subprocess.run(["docker", "rm", "--force", name], capture_output=True)
        subprocess.run(["docker", "network", "rm", name], capture_output=True)


@contextlib.contextmanager
def tool_against_slow_api(tool: str) -> Iterator[tuple[list[str], str]]:
    """`tool` and slow_api: both on this machine where the tool is installed, else both in containers
    (tool_beside_a_server). Yields the tool's command prefix and slow_api's URL."""
    if shutil.which(tool):
        with running_slow_api() as server:
            yield [tool], server.url
        return
    reference = RunningScenario(REFERENCE, build=BUILD)
    if BUILD:
        reference.compose("build")
    (image,) = reference.compose("config", "--images").stdout.split()
    with tool_beside_a_server(tool, image, ["python", "api.py"], 8000) as (command, url):
        yield command, url


HOST_LOADGENS = ("ab", "hey", "wrk", "vegeta")


def path_without(tools: tuple[str, ...], folder: Path, path: str | None = None) -> str:
    """A PATH with every program of this one (or of `path`) except `tools`: links to them in `folder`, for a test
    (or a run, `python -m tests.conftest FOLDER`) that must see a machine without those tools."""
    folder.mkdir(parents=True, exist_ok=True)
    for directory in (path or os.environ["PATH"]).split(os.pathsep):
        for program in Path(directory).glob("*") if Path(directory).is_dir() else ():
            link = folder / program.name
            if program.name not in tools and not link.exists() and os.access(program, os.X_OK):
                link.symlink_to(program)
    return str(folder)


@dataclass
class SlowApiProcess:
    """slow_api/api.py running as a real process, which a test may freeze (SIGSTOP) or kill."""

    process: subprocess.Popen[bytes]
    url: str

    def freeze(self) -> None:
        self.process.send_signal(signal.SIGSTOP)

    def thaw(self) -> None:
        self.process.send_signal(signal.SIGCONT)

    def stop(self) -> None:
        self.thaw()
        self.process.terminate()
        self.process.wait(timeout=10)


@pytest.fixture
def slow_api() -> Iterator[SlowApiProcess]:
    with running_slow_api() as server:
        yield server


@contextlib.contextmanager
def running_slow_api() -> Iterator[SlowApiProcess]:
    """slow_api/api.py as a process of this machine, on a free loopback port, until the block ends."""
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, str(ROOT / "slow_api" / "api.py")],
        env={**os.environ, "PORT": str(port)},
        stdout=subprocess.DEVNULL,
    )
    server = SlowApiProcess(process, f"http://127.0.0.1:{port}/")
    deadline = time.monotonic() + 15
    while True:
        try:
            requests.get(server.url, params={"delay": 0}, timeout=1).raise_for_status()
            break
        except requests.RequestException:
            if process.poll() is not None or time.monotonic() > deadline:
                server.stop()
                raise RuntimeError("slow_api did not start") from None
            time.sleep(0.1)
    try:
        yield server
    finally:
        if process.poll() is None:
            server.stop()


@dataclass
class Answer:
    status: int
    body: str
    seconds: float


def fetch(url: str, timeout: float = 30) -> Answer:
    started = time.monotonic()
    response = requests.get(url, timeout=timeout)
    return Answer(response.status_code, response.text, time.monotonic() - started)


def load(url: str, requests_total: int, concurrency: int) -> tuple[float, list[Answer]]:
    """Send `requests_total` GETs from `concurrency` threads; return the wall time and every answer."""
    started = time.monotonic()
    with ThreadPoolExecutor(max_workers=concurrency) as pool:
        answers = list(pool.map(lambda _: fetch(url), range(requests_total)))
    return time.monotonic() - started, answers


# Two settings for a run of some of the tests (tests/test_hosts.py runs them against an engine that builds
# nothing: it gets the images copied from this machine's engine): TESTS_SCENARIOS="a b" keeps the tests of those
# scenarios only, TESTS_BUILD=0 starts each scenario from the images there without building them.
ONLY_SCENARIOS = os.environ.get("TESTS_SCENARIOS", "").split()
BUILD = os.environ.get("TESTS_BUILD", "1") != "0" and os.environ.get("BUILD_IMAGES", "1") != "0"
if not BUILD:  # every stack this run starts, the modes' too: RunningScenario reads it
    os.environ["BUILD_IMAGES"] = "0"


# The test that runs tests/test_scenarios.py's tests of engines.SCENARIOS_ON_THE_UNSEEN_ENGINE against an engine this
# machine cannot see: where it runs, those scenarios' tests are not run a second time here, on this machine's engine
# (the same images, the same tests; the processes read through the engine there, here for every other scenario).
ON_THE_UNSEEN_ENGINE = "tests/test_hosts.py::test_the_engine_s_tests_and_two_scenarios_tests_pass_against_that_engine"


def scenario_of(item: pytest.Item) -> str | None:
    callspec = getattr(item, "callspec", None)
    return callspec.params.get("scenario") if callspec else None


@pytest.hookimpl(trylast=True)  # after -k, -m and --deselect: the test on the unseen engine must be selected
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    unknown = set(ONLY_SCENARIOS) - set(SCENARIOS)
    if unknown:
        raise pytest.UsageError(f"TESTS_SCENARIOS names no scenario: {' '.join(sorted(unknown))}")
    left_out: set[str] = set()
    if ONLY_SCENARIOS:
        left_out = set(SCENARIOS) - set(ONLY_SCENARIOS)
    elif any(item.nodeid == ON_THE_UNSEEN_ENGINE for item in items) and not engines.unseen_engine_missing():
        left_out = set(engines.SCENARIOS_ON_THE_UNSEEN_ENGINE)
    left = [item for item in items if item.path.name == "test_scenarios.py" and scenario_of(item) in left_out]
    if left:
        config.hook.pytest_deselected(items=left)
        items[:] = [item for item in items if item not in left]


# Where tests/in_docker.py asks for it: each failed test's first line of failure, one JSON line each, for the record
# of what was run again alone and why.
FAILURES_FILE = os.environ.get("TESTS_FAILURES_FILE")


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if FAILURES_FILE and report.failed:
        crash = getattr(report.longrepr, "reprcrash", None)
        message = crash.message if crash is not None else str(report.longrepr).strip().splitlines()[-1:]
        line = {"test": report.nodeid, "when": report.when, "message": str(message)[:600]}
        with open(FAILURES_FILE, "a") as failures:
            failures.write(json.dumps(line) + "\n")


@pytest.fixture(scope="module", params=SCENARIOS)
def scenario(request: pytest.FixtureRequest) -> Iterator[RunningScenario]:
    """Each scenario in turn, up and healthy; torn down after the module's tests, also when one fails."""
    with RunningScenario(request.param, build=BUILD) as running:
        yield running


@dataclass(frozen=True)
class Outcome:
    started: float  # time.monotonic() when the request was sent
    seconds: float
    status: int | None  # None when no HTTP answer came back
    body: str  # the body, or what went wrong when there was no answer

    @property
    def ended(self) -> float:
        return self.started + self.seconds


@dataclass
class BackgroundLoad:
    """`clients` threads, each sending GETs to `url` one after another until the block ends.

    Every outcome is kept, a missing answer too: a test must see each request, not a success rate."""

    url: str
    clients: int
    timeout: float = 60.0
    outcomes: list[Outcome] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _threads: list[threading.Thread] = field(default_factory=list)

    def _client(self) -> None:
        while not self._stop.is_set():
            started = time.monotonic()
            try:
                response = requests.get(self.url, timeout=self.timeout)
                status, body = response.status_code, response.text
            except requests.RequestException as error:
                status, body = None, f"{error.__class__.__name__}: {error}"
            self.outcomes.append(Outcome(started, time.monotonic() - started, status, body))

    def __enter__(self) -> BackgroundLoad:
        self._threads = [threading.Thread(target=self._client, daemon=True) for _ in range(self.clients)]
        for thread in self._threads:
            thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(self.timeout + 5)

    def sent_between(self, start: float, end: float = float("inf")) -> list[Outcome]:
        return [outcome for outcome in self.outcomes if start <= outcome.started < end]


if __name__ == "__main__":
    print(path_without(HOST_LOADGENS, Path(sys.argv[1])))


BOOKSTORE_SMALL_SCALE = 2100  # tests/test_bookstore.py's size: one small data volume for every bookstore test


@pytest.fixture(scope="module")
def small_volume() -> Iterator[None]:
    """The bookstore's small data set (BOOKSTORE_SMALL_SCALE authors), removed after the module only if it made it."""
    name = f"flask-playground-bookstore-{BOOKSTORE_SMALL_SCALE}"
    existed = subprocess.run(["docker", "volume", "inspect", name], capture_output=True).returncode == 0
    yield
    if not existed:
        subprocess.run(["docker", "volume", "rm", "--force", name], capture_output=True)


@functools.cache
def engine_seen() -> tuple[bool | None, str]:
    return doctor.sees_processes()


@pytest.fixture
def engine_processes_seen() -> None:
    """The events (make incidents) signal and watch the servers' processes from this machine: where it cannot see the
    engine's (Docker Desktop's VM), the tests that cause them cannot run."""
    seen, how = engine_seen()
    if seen is False:  # None: it could not tell, and the test will say what is wrong
        pytest.skip(f"the events need a machine that sees the engine's processes; this one: {how}")


def read_back_as_written(folder: Path, kind: type[Any]) -> None:
    """A set a mode just wrote, read back as its records' class and written again: the same file's records, key for
    key and in order (the class writes what it reads)."""
    written = json.loads((folder / "results.json").read_text())["results"]
    again = [record.to_json() for record in store.load(folder).records_of(kind)]
    assert json.dumps(again) == json.dumps(written), [
        (list(a), list(b)) for a, b in zip(again, written, strict=True) if list(a) != list(b) or a != b
    ][:1]
