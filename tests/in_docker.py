"""The tests in Docker, what `make test` runs after `make images`, in two parts at once.

In front, on this machine's engine, one after another: the files that load the machine (benchmarks, bursts of CPU
work, events timed against a load) and assert what a server does under that load. Run beside each other at the same
CPU weight on two cores, some of them failed: a deploy with a short grace period lost nothing because its long
requests came late.

Behind them, the tests of every scenario (tests/test_scenarios.py), which mostly wait (on delays, healthchecks,
stops), split between two more engines, each started here in a network namespace of its own (tests/engines.py), with
files whose checks hold beside another test (the bookstore's among them). Those engines, their containers and their
pytest run in a cgroup of low CPU weight: they get the CPU the front leaves idle (it waits on slow_api, restarts and
grace periods: the machine was 30 to 50 % busy while it ran alone) and give it back whenever the front needs it. Every
scenario publishes its ports on 127.0.0.1; in each engine's namespace 127.0.0.1 is another loopback.

A test that fails while the other part runs is run again once both have ended, alone, and must pass then. Each such
rerun is written to RERUNS_FILE (the test, its part, its first failure's message, how it ran alone), and a run with
more than MOST_RERUNS of them fails: a suite that needs reruns to pass proves less than it says. A check of time whose
premise never held beside the others (tests/cpu_share.py: they had the CPU at each of its tries) never ran as it
claims: it runs alone too, recorded as deferred, and is not counted among those reruns.

The other engines build nothing (their namespaces reach no package index): the first gets the images from this
machine's engine, the second from the first, half a minute each, while the front runs. Without root, without ip,
nsenter, dockerd and containerd, or where no cgroup of low CPU weight can be made, every test runs on this machine's
engine, one after another.

    python -m tests.in_docker [pytest options]
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from bench.containers import roles
from bench.containers.compose import ScenarioError
from bench.containers.images import app_images
from bench.containers.sampler import SAMPLER_IMAGE
from bench.containers.scenarios import REGISTRY, ROOT, SCENARIOS
from bench.measure import profile
from bench.measure.client import build_loadgen_image
from tests import cpu_share, engines

SCENARIO_TESTS = "tests/test_scenarios.py"
# The files that run behind on each engine, beside the scenarios' tests: what they check holds with another test
# running (a dependency killed, a pool's bound, the bookstore's answers, its smallest `make bookstore`, writes kept and
# requests not lost through an event). Not the labs: beside the scenarios' tests, the CPU-starvation lab's fixed
# targets held up two cheap requests, not at most one. Not make yourapp's: beside the scenarios' tests, PBKDF2 held
# flaskr's gevent loop past gevent's monitor's 0.1 s. Not the events whose claims are about time
# (tests/test_incidents.py).
BEHIND = {
    "pg-second": ("tests/test_faults.py", "tests/test_postgres_pool.py", "tests/test_overload.py"),
    "pg-third": (
        "tests/test_bookstore.py",
        "tests/test_bookstore_bench.py",
        "tests/test_bookstore_incidents.py",
        "tests/test_incidents_lossless.py",
    ),
}
NAMES = tuple(BEHIND)  # their veth names, `<name>-h` and `<name>-n`, have at most 15 characters
SUBNET = "10.233"  # tests/test_roles.py (10.231) and tests/test_hosts.py (10.232) start theirs beside these
CPU_GROUP = "playground-tests-behind"
# Of the default CPU weight: where both parts want all of a core, the front gets about eight parts of nine (a busy
# loop beside one in the group, tests/test_hosts.py: 85 %, the group's having started first).
BEHIND_SHARE = 0.125
# A test that fails while the other part runs is run once more when nothing else does, and must pass then; more than
# this many in the whole run fail it, whatever they do alone. Every test's claim is meant to hold beside the other
# part: a rerun is a finding to explain (docs/tests.md lists the last runs' and their causes), not a way to pass.
MOST_RERUNS = 3
# The record of the reruns, written at every run (an empty list where none was needed): CI's summary prints it.
RERUNS_FILE = ROOT / ".test-run" / "reruns.json"
# Images a scenario runs without building them (its `image:` has no `build:`), and the one the harness reads the
# machine's facts with.
RUN_AS_THEY_ARE = ("postgres:17", "nginx:1.26", "httpd:2.4", SAMPLER_IMAGE)
LOADGENS = ("ab", "hey", "wrk")


def images_to_copy() -> list[str]:
    """Every image the other engines' tests may start: the apps' (make images built them), the ones the scenarios run
    as they are, and the tools' (built here first if missing): the load generators' and `make bookstore`'s profiler."""
    tools = [*(build_loadgen_image(tool) for tool in LOADGENS), profile.build_image()]
    return [*app_images(list(REGISTRY)), *RUN_AS_THEY_ARE, *tools]


def pytest_command(options: list[str], *selection: str) -> list[str]:
    """pytest over the tests in Docker."""
    return [sys.executable, "-m", "pytest", "-m", "docker", *options, *selection]


def relay(process: subprocess.Popen[str], prefix: str) -> None:
    """Each line the process prints, with where it runs in front."""
    assert process.stdout is not None  # stdout=PIPE
    for line in process.stdout:
        print(f"{prefix} {line}" if prefix else line, end="", flush=True)


def shares() -> tuple[list[str], list[str]]:
    """The scenarios whose tests run on each engine behind: one in five on the engine with the bookstore's files, the
    others on the other one, so that both end about together (a CI run with one in three: 1656 s and 2057 s). Where
    tests/test_hosts.py ran the tests of some scenarios on an engine of its own, not those (tests/conftest.py leaves
    them out likewise)."""
    done_there = () if engines.unseen_engine_missing() else engines.SCENARIOS_ON_THE_UNSEEN_ENGINE
    scenarios = [scenario for scenario in SCENARIOS if scenario not in done_there]
    return [s for s in scenarios if s not in scenarios[2::5]], scenarios[2::5]


@dataclass(frozen=True)
class Rerun:
    """A test that failed beside the other part, and how it ran alone afterwards."""

    test: str
    part: str  # "in front" or the engine's name
    first_failure: str  # the first line of its failure's message
    alone: str  # "passed", "failed: <its message>", or why it was not run again
    deferred: bool  # its check of time never had the CPU beside the other parts: not counted among the reruns


@dataclass
class Part:
    """One pytest run of the tests in Docker: in front (no prefix, this engine) or behind (an engine's name). Its
    directory holds pytest's cache (what failed, for --last-failed) and each failure's message (tests/conftest.py)."""

    prefix: str
    command: list[str]  # without the cache and --lf
    environment: dict[str, str]
    directory: Path
    process: subprocess.Popen[str] | None = None
    relaying: threading.Thread | None = None
    code: int | None = None

    @property
    def name(self) -> str:
        return self.prefix.strip("[]") or "in front"

    def start(self, *again: str, failures: str = "failures.jsonl") -> subprocess.Popen[str]:
        cache = ["-o", f"cache_dir={self.directory / 'cache'}"]
        environment = self.environment | {"TESTS_FAILURES_FILE": str(self.directory / failures)}
        self.process = process = subprocess.Popen(
            [*self.command, *cache, *again], cwd=ROOT, env=environment, stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT, text=True,
        )  # fmt: skip
        self.relaying = threading.Thread(target=relay, args=(process, self.prefix))
        self.relaying.start()
        return process

    def wait(self) -> int:
        """Its exit status, once it and its output have ended."""
        assert self.process is not None and self.relaying is not None  # started
        self.code = self.process.wait()
        self.relaying.join()
        return self.code

    def failed(self) -> list[str]:
        """The tests that failed in its last run (pytest's cache)."""
        found = self.directory / "cache" / "v" / "cache" / "lastfailed"
        return sorted(json.loads(found.read_text())) if found.exists() else []

    def messages(self, failures: str = "failures.jsonl") -> dict[str, str]:
        """Each failed test's first failure message in that run (setup's, call's or teardown's)."""
        found = self.directory / failures
        lines = [json.loads(line) for line in found.read_text().splitlines()] if found.exists() else []
        messages: dict[str, str] = {}
        for line in lines:
            messages.setdefault(line["test"], " ".join(f"{line['when']}: {line['message']}".split()))
        return messages

    def first_failures(self) -> dict[str, str]:
        """Each test that failed in its last run, with its first failure's message."""
        messages = self.messages()
        return {test: messages.get(test, "?") for test in self.failed()}

    def run_again_alone(self) -> list[Rerun]:
        """Its failed tests once more, with nothing else running; each one's record."""
        failed, first = self.failed(), self.messages()
        print(f"[{self.name}] {len(failed)} failed, run again alone: {' '.join(failed)}", flush=True)
        self.start("--last-failed", "--last-failed-no-failures", "none", failures="failures-alone.jsonl")
        self.wait()
        print(f"[{self.name}] pytest exited {self.code} alone", flush=True)
        still, alone = set(self.failed()) if self.code else set(), self.messages("failures-alone.jsonl")
        outcome = {test: f"failed: {alone.get(test, '?')}" if test in still else "passed" for test in failed}
        return [Rerun(test, self.name, first.get(test, "?"), outcome[test], deferred(first.get(test, "?")))
                for test in failed]  # fmt: skip


def run_again_alone(parts: list[Part], record: Path = RERUNS_FILE) -> int:
    """The tests that failed beside the other part, each run again alone where there are at most MOST_RERUNS besides
    the deferred; the record written and printed. The run's status: 0 only where every part passed, at once or alone."""
    if any(part.code not in (0, 1) or (part.code == 1 and not part.failed()) for part in parts):
        return max(part.code if part.code is not None else 2 for part in parts) or 1  # not a test's failure
    failing = [part for part in parts if part.code == 1]
    count = sum(not deferred(message) for part in failing for message in part.first_failures().values())
    if count > MOST_RERUNS:
        why = f"not run again: {count} failed, more than {MOST_RERUNS}"
        reruns = [Rerun(test, part.name, message, why, deferred(message))
                  for part in failing for test, message in part.first_failures().items()]  # fmt: skip
    else:
        reruns = [rerun for part in failing for rerun in part.run_again_alone()]
    record.parent.mkdir(exist_ok=True)
    record.write_text(json.dumps([dataclasses.asdict(rerun) for rerun in reruns], indent=1) + "\n")
    print(f"run again alone: {count} (at most {MOST_RERUNS}) and {len(reruns) - count} deferred, recorded in {record}")
    for rerun in reruns:
        kind = "deferred" if rerun.deferred else "first"
        print(f"  [{rerun.part}] {rerun.test}\n    {kind}: {rerun.first_failure}\n    alone: {rerun.alone}")
    return 0 if all(rerun.alone == "passed" for rerun in reruns) and count <= MOST_RERUNS else 1


def deferred(first_failure: str) -> bool:
    """Whether a test's first failure was its check of time never having the CPU beside the other parts."""
    return cpu_share.PREMISE_NOT_MET in first_failure


class Behind:
    """The parts behind: for each engine, its images copied, then its pytest started in the CPU group. Copying and
    starting happen in a thread while the front runs."""

    def __init__(self, options: list[str], engines_behind: list[engines.ExtraEngine], group: engines.CpuGroup) -> None:
        self.options, self.engines, self.group = options, engines_behind, group
        self.parts: list[Part] = []
        self.stopping = threading.Event()
        self.starter = threading.Thread(target=self._start_each)
        self.starter.start()

    def _start_each(self) -> None:
        source = roles.Engine()
        for engine, scenarios in zip(self.engines, shares(), strict=True):
            files = BEHIND[engine.name]
            prefix, copying = f"[{engine.name}]", time.monotonic()
            part_dir = Path(tempfile.mkdtemp(prefix=f"pytest-{engine.name}-"))
            command = pytest_command([*self.options, f"--basetemp={part_dir / 'tmp'}"])
            assert engine.cpu_group is not None  # extra_engines(cpu_group=...)
            environment = {
                **os.environ, "TESTS_SCENARIOS": " ".join(scenarios), "DOCKER_HOST": engine.socket, "BUILD_IMAGES": "0",
                cpu_share.MINE: str(engine.cpu_group.accounting),
            }  # fmt: skip
            in_namespace = ["nsenter", f"--net=/var/run/netns/{engine.name}"]
            part = Part(prefix, engine.cpu_group.command([*in_namespace, *command, SCENARIO_TESTS, *files]),
                        environment, part_dir)  # fmt: skip
            self.parts.append(part)
            try:
                copied = roles.copy_images(images_to_copy(), roles.Engine(engine.socket), source)
            except (ScenarioError, subprocess.SubprocessError) as error:
                print(f"{prefix} {error}", flush=True)
                part.code = 2
                continue
            # The next engine copies from this one: its dockerd, in the CPU group, not this machine's, sends them.
            source = roles.Engine(engine.socket)
            print(f"{prefix} {len(copied)} images copied in {time.monotonic() - copying:.0f} s", flush=True)
            print(f"{prefix} the tests of {len(scenarios)} scenarios {' '.join(files)}", flush=True)
            if self.stopping.is_set():
                return
            part.start()

    def wait(self) -> None:
        """Until each part has ended; each part's exit status in its `code`."""
        self.starter.join()
        for part in self.parts:
            if part.process:
                part.wait()
                print(f"{part.prefix} pytest exited {part.code}", flush=True)

    def stop(self) -> None:
        """Interrupted: none left running."""
        self.stopping.set()
        self.starter.join()
        for part in self.parts:
            if part.process and part.process.poll() is None:
                part.process.kill()
                part.process.wait()


def run_front_and_behind(options: list[str], engines_behind: list[engines.ExtraEngine], group: engines.CpuGroup) -> int:
    started = time.monotonic()
    print("the tests that load the machine, in front, on this engine", flush=True)
    front_dir = Path(tempfile.mkdtemp(prefix="pytest-front-"))
    ignored = [f"--ignore={name}" for name in (SCENARIO_TESTS, *(file for files in BEHIND.values() for file in files))]
    theirs = {cpu_share.THEIRS: str(group.accounting)}
    front = Part("", pytest_command([*options, *ignored]), dict(os.environ) | theirs, front_dir)
    behind = Behind(options, engines_behind, group)
    try:
        front.start()
        front.wait()
        print(f"the tests in front took {time.monotonic() - started:.0f} s", flush=True)
        behind.wait()
    finally:
        behind.stop()
    code = run_again_alone([front, *behind.parts])
    remeasured = cpu_share.REMEASURED.read_text().splitlines() if cpu_share.REMEASURED.exists() else []
    print(f"checks of time measured again while the other parts had the CPU: {len(remeasured)}", flush=True)
    print(f"the tests in Docker took {time.monotonic() - started:.0f} s", flush=True)
    return code


def one_after_another(options: list[str], reason: str) -> int:
    print(f"one engine ({reason}): every test in Docker here, one after another", flush=True)
    return subprocess.run(pytest_command(["-p", "no:cacheprovider", *options]), cwd=ROOT).returncode


def main(options: list[str]) -> int:
    for record in (RERUNS_FILE, cpu_share.REMEASURED):  # an earlier run's
        record.unlink(missing_ok=True)
    if os.geteuid() != 0 or engines.missing_tools():
        return one_after_another(options, "more need root, ip, nsenter, dockerd, containerd")
    engines.clear_leftovers(*NAMES)
    with engines.low_cpu_group(CPU_GROUP, BEHIND_SHARE) as group:
        if group is None:
            return one_after_another(options, "no cgroup of low CPU weight can be made here")
        with engines.extra_engines(*NAMES, subnet=SUBNET, cpu_group=group) as engines_behind:
            return run_front_and_behind(options, engines_behind, group)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
