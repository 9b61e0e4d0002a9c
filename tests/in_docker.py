"""The tests in Docker, what `make test` runs after `make images`, in two parts at once.

In front, on this machine's engine, one after another: the files that load the machine (benchmarks, 300 clients at
once, bursts of CPU work, events timed against a load) and assert what a server does under that load. Run beside each
other at the same CPU weight on two cores, some of them failed: the bookstore's PyPy target timed out connecting to
Postgres, a deploy with a short grace period lost nothing because its long requests came late.

Behind them, the tests of every scenario (tests/test_scenarios.py), which mostly wait (on delays, healthchecks,
stops), split between two more engines, each started here in a network namespace of its own (tests/engines.py), with
files whose checks hold beside another test. Those engines, their containers and their pytest run in a cgroup of low
CPU weight: they get the CPU the front leaves idle (it waits on slow_api, restarts and grace periods: the machine was
30 to 50 % busy while it ran alone) and give it back whenever the front needs it. Every scenario publishes its ports on
127.0.0.1; in each engine's namespace 127.0.0.1 is another loopback.

The other engines build nothing (their namespaces reach no package index): they get the images from this machine's
engine, half a minute each, while the front runs. Without root, without ip, nsenter, dockerd and containerd, or where
no cgroup of low CPU weight can be made, every test runs on this machine's engine, one after another.

    python -m tests.in_docker [pytest options]
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import threading
import time

from bench.containers import roles
from bench.containers.compose import ScenarioError
from bench.containers.images import app_images
from bench.containers.sampler import SAMPLER_IMAGE
from bench.containers.scenarios import REGISTRY, ROOT, SCENARIOS
from bench.measure.client import build_loadgen_image
from tests import engines

SCENARIO_TESTS = "tests/test_scenarios.py"
# The files that run behind, beside the scenarios' tests: what they check holds with another test running (a
# dependency killed, a pool's bound). Not the labs: beside the scenarios' tests, the CPU-starvation lab's fixed targets
# held up two cheap requests, not at most one. Not make yourapp's: beside the scenarios' tests, PBKDF2 held flaskr's
# gevent loop past gevent's monitor's 0.1 s.
BEHIND = ("tests/test_faults.py", "tests/test_postgres_pool.py", "tests/test_overload.py")
NAMES = ("pg-second", "pg-third")  # their veth names, `<name>-h` and `<name>-n`, have at most 15 characters
SUBNET = "10.233"  # tests/test_roles.py (10.231) and tests/test_hosts.py (10.232) start theirs beside these
CPU_GROUP = "playground-tests-behind"
# Of the default CPU weight: 1/8 leaves the front at least about nine tenths of the CPU when both want all of it.
BEHIND_SHARE = 0.125
# Images a scenario runs without building them (its `image:` has no `build:`), the one the harness reads the
# machine's facts with, and the load generators'.
RUN_AS_THEY_ARE = ("postgres:17", "nginx:1.26", "httpd:2.4", SAMPLER_IMAGE)
LOADGENS = ("ab", "hey", "wrk")


def images_to_copy() -> list[str]:
    """Every image the other engines' tests may start: the apps' (make images built them), the ones the scenarios run
    as they are, and the load generators' (built here first if missing)."""
    return [*app_images(list(REGISTRY)), *RUN_AS_THEY_ARE, *(build_loadgen_image(tool) for tool in LOADGENS)]


def pytest_command(options: list[str], *selection: str) -> list[str]:
    return [sys.executable, "-m", "pytest", "-m", "docker", "-p", "no:cacheprovider", *options, *selection]


def relay(process: subprocess.Popen[str], prefix: str) -> None:
    """Each line the process prints, with where it runs in front."""
    assert process.stdout is not None  # stdout=PIPE
    for line in process.stdout:
        print(f"{prefix} {line}", end="", flush=True)


def halves() -> tuple[list[str], list[str]]:
    """The scenarios whose tests run on each engine behind: every other one in the registry's order. Where
    tests/test_hosts.py ran the tests of some scenarios on an engine of its own, not those (tests/conftest.py leaves
    them out likewise)."""
    done_there = () if engines.unseen_engine_missing() else engines.SCENARIOS_ON_THE_UNSEEN_ENGINE
    scenarios = [scenario for scenario in SCENARIOS if scenario not in done_there]
    return scenarios[1::2], scenarios[::2]


class Behind:
    """The tests behind: for each engine, its images copied, then its pytest started in the CPU group, each line of
    its output printed with the engine's name in front. Copying and starting happen in a thread while the front runs."""

    def __init__(self, options: list[str], engines_behind: list[engines.ExtraEngine], group: engines.CpuGroup) -> None:
        self.options, self.engines, self.group = options, engines_behind, group
        self.processes: dict[str, subprocess.Popen[str]] = {}
        self.relays: list[threading.Thread] = []
        self.failed: list[str] = []
        self.stopping = threading.Event()
        self.starter = threading.Thread(target=self._start_each)
        self.starter.start()

    def _start_each(self) -> None:
        for engine, scenarios, files in zip(self.engines, halves(), (BEHIND, ()), strict=True):
            prefix = f"[{engine.name}]"
            copying = time.monotonic()
            try:
                copied = roles.copy_images(images_to_copy(), roles.Engine(engine.socket))
            except ScenarioError as error:
                print(f"{prefix} {error}", flush=True)
                self.failed.append(prefix)
                continue
            print(f"{prefix} {len(copied)} images copied in {time.monotonic() - copying:.0f} s", flush=True)
            print(f"{prefix} the tests of {len(scenarios)} scenarios {' '.join(files)}", flush=True)
            basetemp = tempfile.mkdtemp(prefix=f"pytest-{engine.name}-")
            environment = {
                **os.environ,
                "TESTS_SCENARIOS": " ".join(scenarios),
                "DOCKER_HOST": engine.socket,
                "BUILD_IMAGES": "0",
            }
            command = pytest_command([*self.options, f"--basetemp={basetemp}"], SCENARIO_TESTS, *files)
            if self.stopping.is_set():
                return
            process = subprocess.Popen(
                self.group.command(["nsenter", f"--net=/var/run/netns/{engine.name}", *command]),
                cwd=ROOT,
                env=environment,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
            )
            self.processes[prefix] = process
            self.relays.append(threading.Thread(target=relay, args=(process, prefix)))
            self.relays[-1].start()

    def wait(self) -> int:
        """The highest exit status of the tests behind, once each has ended."""
        self.starter.join()
        codes = {prefix: process.wait() for prefix, process in self.processes.items()}
        for thread in self.relays:
            thread.join()
        for prefix, code in codes.items():
            print(f"{prefix} pytest exited {code}", flush=True)
        return max([*codes.values(), *(1 for _ in self.failed)], default=0)

    def stop(self) -> None:
        """Interrupted: none left running."""
        self.stopping.set()
        self.starter.join()
        for process in self.processes.values():
            if process.poll() is None:
                process.kill()
                process.wait()


def run_front_and_behind(options: list[str], engines_behind: list[engines.ExtraEngine], group: engines.CpuGroup) -> int:
    started = time.monotonic()
    print("the tests that load the machine, in front, on this engine", flush=True)
    behind = Behind(options, engines_behind, group)
    try:
        ignored = [f"--ignore={name}" for name in (SCENARIO_TESTS, *BEHIND)]
        front = subprocess.run(pytest_command([*options, *ignored]), cwd=ROOT).returncode
        print(f"the tests in front took {time.monotonic() - started:.0f} s", flush=True)
        code = max(front, behind.wait())
    finally:
        behind.stop()
    print(f"the tests in Docker took {time.monotonic() - started:.0f} s", flush=True)
    return code


def one_after_another(options: list[str], reason: str) -> int:
    print(f"one engine ({reason}): every test in Docker here, one after another", flush=True)
    return subprocess.run(pytest_command(options), cwd=ROOT).returncode


def main(options: list[str]) -> int:
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
