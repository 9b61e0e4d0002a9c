"""The commands a user types, end to end against real containers: `make up`, `targets`, `make ab`, `make threads`
and `make down` on one scenario; `make sweep`, `make slowclients`, `make labs` and `make incidents` at their
smallest, each result set naming what its variables asked for; and both apps telling a slow_api that does not answer
(504, once their own timeout is up) from one that is gone (502, before that), through the real containers."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from bench.containers.compose import RunningScenario, compose_command
from bench.containers.scenarios import ROOT, Target, load_targets
from bench.modes.slowclients.run import KINDS
from tests.conftest import MAKE, Answer, fetch

pytestmark = pytest.mark.docker


def make(target: str, *variables: str, timeout: float = 300) -> str:
    """`make TARGET NAME=value ...` from the checkout's root, as a user types it; its output, which must end well."""
    finished = subprocess.run(
        [*MAKE, target, *variables], cwd=ROOT, capture_output=True, text=True, timeout=timeout, check=False
    )
    output = finished.stdout + finished.stderr
    assert finished.returncode == 0, f"make {target} {' '.join(variables)} exited {finished.returncode}:\n{output}"
    return output


def target_line(target: Target, output: str) -> bool:
    """Whether the output has the target's line of `python -m bench targets`: its name, URL, server and mode."""
    wanted = [target.name, target.url, target.server, f"{target.mode},"]
    return any(line.split()[:4] == wanted for line in output.splitlines())


def ab_figures(output: str, label: str) -> list[int]:
    """One figure of each of ab's reports in the output: a report per target."""
    return [int(found) for found in re.findall(rf"^{label}:\s+(\d+)\s*$", output, re.MULTILINE)]


def project_containers(scenario: str) -> list[str]:
    """Every container of the scenario's Compose project, stopped ones too."""
    listed = subprocess.run([*compose_command(), "-p", scenario, "ps", "--all", "--quiet"], capture_output=True,
                            text=True, check=True)  # fmt: skip
    return listed.stdout.split()


def test_make_up_targets_ab_threads_and_down_on_one_scenario() -> None:
    scenario = "sync-gunicorn"
    targets = load_targets(scenario)
    try:
        started = make("up", f"S={scenario}")
        for target in targets:
            assert target_line(target, started), (target.name, started)
            answer = fetch(f"{target.url}?delay=0")
            assert (answer.status, answer.body) == (200, target.expected_body(0)), target.name
        # The one command of `python -m bench` without a make target: the lines `make up` printed, again.
        listed = subprocess.run([sys.executable, "-m", "bench", "targets", scenario], cwd=ROOT, capture_output=True,
                                text=True, check=True).stdout  # fmt: skip
        assert all(target_line(target, listed) for target in targets), listed
        loaded = make("ab", f"S={scenario}", "N=20", "C=5", "DELAY=0.1")
        each = len(targets)
        assert ab_figures(loaded, "Concurrency Level") == [5] * each, loaded
        assert ab_figures(loaded, "Complete requests") == [20] * each, loaded
        assert ab_figures(loaded, "Failed requests") == [0] * each, loaded
        assert "Non-2xx responses" not in loaded, loaded  # ab prints the line only when there are some
        assert "?delay=0.1" in loaded, loaded  # DELAY reached ab's URL: the default would have been 1 s
        shown = make("threads", f"S={scenario}")
        lines = re.finditer(r"^(\S+)\s+(\d+) processes, (\d+) OS threads$", shown, re.MULTILINE)
        counts = {found[1]: (int(found[2]), int(found[3])) for found in lines}
        assert counts.keys() == set(RunningScenario(scenario).services()), shown
        assert all(processes > 0 and threads > 0 for processes, threads in counts.values()), counts
    finally:
        make("down", f"S={scenario}")
    assert project_containers(scenario) == []


def test_make_sweep_measures_each_concurrency_of_the_grid(tmp_path: Path) -> None:
    make("sweep", "SCENARIOS=async-gevent-gunicorn", "CONCURRENCIES=5 10", "DELAY=0.1", f"OUT={tmp_path}")
    document = json.loads((tmp_path / "results.json").read_text())
    assert document["metadata"]["mode"] == "sweep"
    records = [record for record in document["results"] if record["target"] == "gunicorn-gevent"]
    # 5 x as many requests as clients at each level, at the DELAY asked for.
    assert [(r["c"], r["n"], r["delay"]) for r in records] == [(5, 25, 0.1), (10, 50, 0.1)], records
    for record in records:
        assert record["verified"] and record["ok"] and record["problem"] is None, record
        assert (record["failed"], record["non2xx"]) == (0, 0), record
    # Only the scenario asked for, beside slow_api alone at the same loads (the reference).
    assert {r["target"] for r in document["results"]} == {"gunicorn-gevent", "slow_api-alone"}
    assert (tmp_path / "results.md").stat().st_size > 0


# Both apps' SLOW_API_TIMEOUT_MARGIN, which no compose file sets: a call to slow_api may take delay + 5 s; and the
# seconds they give a connection to slow_api.
TIMEOUT_MARGIN, CONNECT_TIMEOUT = 5.0, 3.0


def every_target(targets: list[Target], query: str) -> list[tuple[Target, Answer]]:
    """One request to each target at once: a 504 waits the app's timeout, and the targets wait it side by side."""
    with ThreadPoolExecutor(len(targets)) as pool:
        answers = pool.map(lambda target: fetch(f"{target.url}?{query}", timeout=30), targets)
        return list(zip(targets, answers, strict=True))


def said(answers: list[tuple[Target, Answer]]) -> dict[str, tuple[int, float]]:
    """Each target's status and seconds, for the test's output (pytest -s): how long each failure took here."""
    return {target.name: (answer.status, round(answer.seconds, 2)) for target, answer in answers}


# sync-gunicorn too: test_scenarios.py and test_faults.py see the Flask app's 502 in Docker, never its 504 alone.
@pytest.mark.parametrize("scenario", ["async-quart", "sync-gunicorn"])
def test_slow_api_paused_is_a_504_after_the_app_s_timeout_and_stopped_a_502_before_it(scenario: str) -> None:
    with RunningScenario(scenario) as running:
        targets = load_targets(scenario)
        # Paused, slow_api's kernel still accepts connections and takes the request: no answer ever comes.
        running.compose("pause", "slow_api")
        try:
            slow = every_target(targets, "delay=0")
        finally:
            running.compose("unpause", "slow_api")
        print(scenario, "paused:", said(slow))
        for target, answer in slow:
            wanted = f"slow_api did not answer within {TIMEOUT_MARGIN:g} seconds\n"
            assert (answer.status, answer.body) == (504, wanted), (target.name, answer)
            # Not before its timeout (a slow answer is not a failure), nor long after it.
            assert TIMEOUT_MARGIN - 0.5 <= answer.seconds < TIMEOUT_MARGIN + 5, (target.name, answer.seconds)
        for target, answer in every_target(targets, "delay=0"):
            assert (answer.status, answer.body) == (200, target.expected_body(0)), (target.name, answer)
        running.stop("slow_api")
        try:
            gone = every_target(targets, "delay=0")
        finally:
            running.start("slow_api")
            running.wait_healthy()
        print(scenario, "stopped:", said(gone))
        for target, answer in gone:
            assert (answer.status, answer.body) == (502, "slow_api is unreachable\n"), (target.name, answer)
            # Its name no longer resolves, or an address kept from an earlier lookup (aiohttp's cache) answers nothing
            # until the connect timeout: never the read timeout's wait.
            assert answer.seconds < CONNECT_TIMEOUT + 1.5, (target.name, answer.seconds)
        for target, answer in every_target(targets, "delay=0"):
            assert (answer.status, answer.body) == (200, target.expected_body(0)), (target.name, answer)


def results_of(out: Path) -> dict:
    """The set's results.json, once its results.md has been rendered from it."""
    assert (out / "results.md").stat().st_size > 0
    return json.loads((out / "results.json").read_text())


def test_make_slowclients_passes_its_scenarios_and_levels(tmp_path: Path) -> None:
    make("slowclients", "SCENARIOS=async-gevent-gunicorn", "LEVELS=10", f"OUT={tmp_path}")
    document = results_of(tmp_path)
    assert document["metadata"]["levels"] == [10], document["metadata"]
    # One record per kind of slow client at the one level: that scenario's target and no other.
    described = sorted((r["scenario"], r["target"], r["kind"], r["connections"]) for r in document["results"])
    assert described == sorted(("async-gevent-gunicorn", "gunicorn-gevent", kind, 10) for kind in KINDS), described
    assert all(record["ok"] for record in document["results"]), document["results"]


def test_make_labs_passes_its_labs(tmp_path: Path) -> None:
    make("labs", "LABS=late-patch", f"OUT={tmp_path}")
    document = results_of(tmp_path)
    assert document["metadata"]["command"] == f"python -m bench.modes.labs --labs late-patch --out {tmp_path}"
    records = document["results"]
    assert records and {record["lab"] for record in records} == {"late-patch"}, records
    assert {record["target"] for record in records} == {target.name for target in load_targets("late-patch")}
    assert (tmp_path / "index.html").stat().st_size > 0


def test_make_incidents_passes_its_target_event_clients_and_seconds(
    engine_processes_seen: None, tmp_path: Path
) -> None:
    variables = ["TARGETS=gunicorn-gevent", "EVENTS=reload", "CLIENTS=10", "SECONDS=4"]
    make("incidents", *variables, f"OUT={tmp_path}")
    (record,) = results_of(tmp_path)["results"]
    described = (record["target"], record["event"], record["clients"], record["load_seconds"], record["repeat"])
    assert described == ("gunicorn-gevent", "reload", 10, 4.0, 1), record
    assert record["ok"] and record["sent"] > 0, record
