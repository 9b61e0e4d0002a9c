"""The tests in Docker, what `make test` runs after `make images`, in two parts. First the files that load the machine
(benchmarks, 300 clients at once, bursts of CPU work, events timed against a load) and assert what a server does
under that load: alone, one after another, on this machine's engine. Run beside each other on two cores, some of them
failed: the bookstore's PyPy target timed out connecting to Postgres, a deploy with a short grace period lost nothing
because its long requests came late. Then the tests of every scenario (tests/test_scenarios.py), which mostly wait (on
delays, healthchecks, stops), split between this engine and a second one started here in a network namespace of its
own (tests/engines.py), each part with files whose checks hold beside another test.

Every scenario publishes its ports on 127.0.0.1, so two stacks cannot run on one engine at once; in the second
engine's namespace 127.0.0.1 is another loopback. Two at a time take about half as long on two cores.

The second engine builds nothing (its namespace reaches no package index): it gets the images from this machine's
engine (half a minute) once the first files have run. Without root, or without ip, nsenter, dockerd and containerd,
every test runs on this machine's engine, one after another.

    python -m tests.two_engines [pytest options]
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from bench.containers import roles
from bench.containers.images import app_images
from bench.containers.sampler import SAMPLER_IMAGE
from bench.containers.scenarios import REGISTRY, ROOT, SCENARIOS
from bench.measure.client import build_loadgen_image
from tests import engines

SCENARIO_TESTS = "tests/test_scenarios.py"
# The files that run beside the scenarios' tests, not alone: what they check holds with another test running (their
# extra engines, a dependency killed, a pool's bound). Not the labs: beside the scenarios' tests, the CPU-starvation
# lab's fixed targets held up two cheap requests, not at most one.
# Not make yourapp's: its loads take both cores, and beside them a busy loop of tests/test_roles.py got 0.21 s of CPU
# in 1.5 s; beside the scenarios' tests, PBKDF2 held flaskr's gevent loop past gevent's monitor's 0.1 s.
BESIDE_HERE = ("tests/test_hosts.py", "tests/test_roles.py")
BESIDE_THERE = ("tests/test_faults.py", "tests/test_postgres_pool.py", "tests/test_overload.py")
NAME = "pg-second"  # its veth names, `<name>-h` and `<name>-n`, have at most 15 characters
SUBNET = "10.233"  # tests/test_roles.py (10.231) and tests/test_hosts.py (10.232) start theirs beside this one
# Images a scenario runs without building them (its `image:` has no `build:`), the one the harness reads the
# machine's facts with, and the load generators'.
RUN_AS_THEY_ARE = ("postgres:17", "nginx:1.26", "httpd:2.4", SAMPLER_IMAGE)
LOADGENS = ("ab", "hey", "wrk")


def images_to_copy() -> list[str]:
    """Every image the second engine's tests may start: the apps' (make images built them), the ones the scenarios run
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
    """The scenarios whose tests run here and there: every other one in the registry's order (a CI run with two of
    every five here: 466 s here, 599 there). Where
    tests/test_hosts.py ran the tests of some scenarios on an engine of its own, not those (tests/conftest.py leaves
    them out likewise)."""
    done_there = () if engines.unseen_engine_missing() else engines.SCENARIOS_ON_THE_UNSEEN_ENGINE
    scenarios = [scenario for scenario in SCENARIOS if scenario not in done_there]
    here = scenarios[1::2]
    return here, [scenario for scenario in scenarios if scenario not in here]


def run_at_once(commands: dict[str, tuple[list[str], dict[str, str]]]) -> int:
    """Each command at once, each line of its output printed with its prefix; the highest exit status."""
    processes = {
        prefix: subprocess.Popen(
            command, cwd=ROOT, env=environment, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
        for prefix, (command, environment) in commands.items()
    }
    relays = [threading.Thread(target=relay, args=(process, prefix)) for prefix, process in processes.items()]
    for thread in relays:
        thread.start()
    try:
        codes = {prefix: process.wait() for prefix, process in processes.items()}
    finally:  # interrupted: none left running
        for process in processes.values():
            if process.poll() is None:
                process.kill()
                process.wait()
    for thread in relays:
        thread.join()
    for prefix, code in codes.items():
        print(f"{prefix} pytest exited {code}", flush=True)
    return max(codes.values())


def run_split(options: list[str], engine: engines.ExtraEngine) -> int:
    started = time.monotonic()
    here, there = halves()
    print("the tests in Docker that run alone, on this engine", flush=True)
    beside = [SCENARIO_TESTS, *BESIDE_HERE, *BESIDE_THERE]
    first = subprocess.run(pytest_command(options, *(f"--ignore={name}" for name in beside)), cwd=ROOT).returncode
    copying = time.monotonic()
    copied = roles.copy_images(images_to_copy(), roles.Engine(engine.socket))
    print(f"second engine: {len(copied)} images copied in {time.monotonic() - copying:.0f} s", flush=True)
    print(f"the scenarios' tests ({len(here)} here, {len(there)} there) and the files beside them", flush=True)
    basetemp = Path(tempfile.mkdtemp(prefix="pytest-second-engine-"))
    in_namespace = ["nsenter", f"--net=/var/run/netns/{engine.name}"]
    environment = {**os.environ, "TESTS_SCENARIOS": " ".join(here)}
    elsewhere = {**os.environ, "TESTS_SCENARIOS": " ".join(there), "DOCKER_HOST": engine.socket, "BUILD_IMAGES": "0"}
    second = run_at_once(
        {
            "[this engine]": (pytest_command(options, SCENARIO_TESTS, *BESIDE_HERE), environment),
            "[second engine]": (
                [*in_namespace, *pytest_command([*options, f"--basetemp={basetemp}"], SCENARIO_TESTS, *BESIDE_THERE)],
                elsewhere,
            ),
        }
    )
    print(f"the tests in Docker took {time.monotonic() - started:.0f} s", flush=True)
    return max(first, second)


def main(options: list[str]) -> int:
    if os.geteuid() != 0 or engines.missing_tools():
        needs = "root, ip, nsenter, dockerd, containerd"
        print(f"one engine (a second needs {needs}): every test in Docker here, one after another", flush=True)
        return subprocess.run(pytest_command(options), cwd=ROOT).returncode
    engines.clear_leftovers(NAME)
    with engines.extra_engines(NAME, subnet=SUBNET) as (engine,):
        return run_split(options, engine)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
