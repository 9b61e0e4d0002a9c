"""What `make test` does with the tests in Docker that failed beside the other parts (tests/in_docker.py), on real
pytest runs of a few tests made for it: run again alone and recorded, at most MOST_RERUNS of them, and the checks
of time whose premise never held (tests/cpu_share.py) run alone too, apart, not counted among the reruns."""

from __future__ import annotations

import json
import sys
import threading
import time
from pathlib import Path

import pytest

from tests import cpu_share, in_docker
from tests.cpu_share import PREMISE_NOT_MET

# Each test fails the first time it runs (a mark in MARKS says it ran) and passes the next, unless STILL names it.
# The starved ones fail as a check of time does where the other parts kept the CPU at each of its tries.
TESTS = """
import os
from pathlib import Path

MARKS = Path(os.environ["MARKS"])


def first_time(name):
    mark = MARKS / name
    first = not mark.exists()
    mark.touch()
    return first or name in os.environ.get("STILL", "").split()


def test_passes():
    pass
"""
STARVED = """

def test_starved_{n}():
    assert not first_time("starved_{n}"), "{premise} 4 times: the other parts used 1.9 cores while it ran"
"""
FLAKY = """

def test_flaky_{n}():
    assert not first_time("flaky_{n}"), "an answer after 4.7 s"
"""


def run(tmp_path: Path, starved: int, flaky: int, still: str = "") -> tuple[int, list[dict[str, object]]]:
    """One part's run of the made tests, then in_docker's reruns: the status and the record."""
    folder = tmp_path / "made"
    folder.mkdir()
    (folder / "pytest.ini").write_text("[pytest]\n")
    (folder / "conftest.py").write_text("from tests.conftest import pytest_runtest_logreport  # noqa: F401\n")
    text = TESTS + "".join(STARVED.format(n=n, premise=PREMISE_NOT_MET) for n in range(starved))
    (folder / "test_made.py").write_text(text + "".join(FLAKY.format(n=n) for n in range(flaky)))
    (tmp_path / "marks").mkdir()
    environment = {"MARKS": str(tmp_path / "marks"), "STILL": still, "PYTHONPATH": str(in_docker.ROOT)}
    command = [sys.executable, "-m", "pytest", "-p", "no:xdist", "-c", str(folder / "pytest.ini"), str(folder)]
    part = in_docker.Part("[made]", command, environment, tmp_path / "part")
    part.directory.mkdir()
    part.start()
    part.wait()
    record = tmp_path / "reruns.json"
    return in_docker.run_again_alone([part], record), json.loads(record.read_text())


def test_checks_whose_premise_never_held_run_alone_apart_from_the_counted_reruns(tmp_path: Path) -> None:
    code, record = run(tmp_path, starved=in_docker.MOST_RERUNS + 2, flaky=in_docker.MOST_RERUNS)
    assert code == 0, record
    deferred = sorted(str(rerun["test"]).rsplit("::", 1)[1] for rerun in record if rerun["deferred"])
    assert deferred == [f"test_starved_{n}" for n in range(in_docker.MOST_RERUNS + 2)], record
    assert sum(not rerun["deferred"] for rerun in record) == in_docker.MOST_RERUNS, record
    assert all(rerun["alone"] == "passed" and rerun["part"] == "made" for rerun in record), record
    assert all(PREMISE_NOT_MET in str(rerun["first_failure"]) for rerun in record if rerun["deferred"]), record


def test_more_reruns_than_the_most_fail_the_run_unrun(tmp_path: Path) -> None:
    code, record = run(tmp_path, starved=1, flaky=in_docker.MOST_RERUNS + 1)
    assert code == 1, record
    assert len(record) == in_docker.MOST_RERUNS + 2, record
    assert all(str(rerun["alone"]).startswith("not run again") for rerun in record), record


@pytest.mark.parametrize("still", ["starved_0", "flaky_0"])
def test_a_test_that_fails_alone_too_fails_the_run(tmp_path: Path, still: str) -> None:
    code, record = run(tmp_path, starved=1, flaky=1, still=still)
    assert code == 1, record
    alone = {str(rerun["test"]).rsplit("::test_", 1)[1]: str(rerun["alone"]) for rerun in record}
    assert alone[still].startswith("failed: call: AssertionError"), record
    assert [outcome for outcome in alone.values() if outcome == "passed"], record


def test_a_premise_not_met_is_tried_again_then_said_as_such(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A test's own premise (pools full before the claim about full pools) tried again, TRIES in all, and said as a
    premise never met, which the run then tries alone; any other failure fails at once."""
    monkeypatch.setattr(cpu_share, "REMEASURED", tmp_path / "remeasured.jsonl")
    for alone in (cpu_share.MINE, cpu_share.THEIRS):
        monkeypatch.delenv(alone, raising=False)  # no other parts: nothing to wait for between tries
    tries: list[int] = []

    def full_on_the_third() -> str:
        tries.append(1)
        if len(tries) < 3:
            raise cpu_share.PremiseNotMet("not every pool full after 6.2 s: 1 of 16")
        return "held"

    assert cpu_share.where_the_cpu_was_there(full_on_the_third) == "held" and len(tries) == 3

    def never_full() -> None:
        raise cpu_share.PremiseNotMet("not every pool full after 6.2 s: 1 of 16")

    with pytest.raises(AssertionError, match=f"{PREMISE_NOT_MET} {cpu_share.TRIES} times: its own premise failed"):
        cpu_share.where_the_cpu_was_there(never_full)
    plain: list[int] = []

    def the_server_s_fault() -> None:
        plain.append(1)
        raise AssertionError("a 503 where 200 was asked")

    with pytest.raises(AssertionError, match="a 503 where 200"):
        cpu_share.where_the_cpu_was_there(the_server_s_fault)
    assert len(plain) == 1


class OthersAt:
    """The other parts' CPU time as tests/cpu_share.py reads it (a cgroup's cpuacct.usage, here a file of its own)
    going up at `cores` until `quiet` is set: the others' load, without a load."""

    def __init__(self, folder: Path, cores: float) -> None:
        self.usage, self.cores, self.quiet = folder / "cpuacct.usage", cores, threading.Event()
        self.stopped = threading.Event()
        self.usage.write_text("0")
        self.thread = threading.Thread(target=self._count, daemon=True)
        self.thread.start()

    def _count(self) -> None:
        nanoseconds, last = 0.0, time.monotonic()
        while not self.stopped.wait(0.02):
            now = time.monotonic()
            nanoseconds += 0 if self.quiet.is_set() else self.cores * (now - last) * 1e9
            written = self.usage.with_suffix(".new")
            written.write_text(str(int(nanoseconds)))
            written.replace(self.usage)  # whole, as the kernel's file reads
            last = now

    def stop(self) -> None:
        self.stopped.set()
        self.thread.join()


@pytest.mark.parametrize("quiet_after_the_first_try", [False, True])
def test_a_starved_check_is_deferred_once_the_others_are_never_quiet(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, quiet_after_the_first_try: bool
) -> None:
    """A check that failed while the others used nearly every core: tried again once they are quiet, and deferred
    (said as a premise never met) at once where they are not quiet within MOST_WAIT s, not tried TRIES times."""
    monkeypatch.setattr(cpu_share, "REMEASURED", tmp_path / "remeasured.jsonl")
    monkeypatch.setattr(cpu_share, "QUIET_FOR", 0.3)
    monkeypatch.setattr(cpu_share, "MOST_WAIT", 1.0)
    monkeypatch.delenv(cpu_share.MINE, raising=False)
    monkeypatch.setenv(cpu_share.THEIRS, str(tmp_path))
    others = OthersAt(tmp_path, 0.9 * cpu_share.machine_cores())
    tries: list[int] = []

    def late_beside_them() -> str:
        tries.append(1)
        time.sleep(0.6)  # long enough for the watch to see the others' rate
        if len(tries) == 1:
            if quiet_after_the_first_try:
                others.quiet.set()
            raise AssertionError("an answer after 4.7 s")
        return "answered"

    try:
        if quiet_after_the_first_try:
            assert cpu_share.where_the_cpu_was_there(late_beside_them) == "answered" and len(tries) == 2
        else:
            with pytest.raises(AssertionError, match=f"{PREMISE_NOT_MET} 1 time: .* not quiet for 0.3 s within 1 s"):
                cpu_share.where_the_cpu_was_there(late_beside_them)
            assert len(tries) == 1
    finally:
        others.stop()
