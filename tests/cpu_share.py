"""Whether a check of time had the machine's CPU, and the check made again where the other parts of `make test` had it.

`make test` runs the tests in Docker in parts at once (tests/in_docker.py): in front at the default CPU weight, behind
on two more engines in a group of low weight. A check of time (an answer within its delay and a margin, a number of
requests at once within so many rounds, a pool's timeout not reached) made while the other parts kept the cores busy
measures them, not the server: behind, an answer of 0.4 s once took 4.7 s. So each such check reads, from the
cgroups, how much CPU the other parts used while it ran. Where it failed while they used more than half the machine,
its premise (the cores were there for it) did not hold: it is made again once they are quiet, and said so, in the
output and in the run's record (REMEASURED). Where it failed while they left the cores free, it fails at once: that
is the server. Its margins are never widened.

In front, the others are the parts behind (THEIRS: their group's CPU time). Behind, they are everything but this
part's own group (MINE): the front, the other engine behind, the machine's own daemons. Run alone (neither set),
there are no others and a failed check fails."""

from __future__ import annotations

import functools
import json
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from bench.containers.compose import ScenarioError
from bench.containers.scenarios import ROOT
from tests.engines import cpu_seconds_of

MINE, THEIRS = "TESTS_MY_CPU_GROUP", "TESTS_THEIR_CPU_GROUP"
# Where the others used more than this share of the machine's cores over a stretch of a check, they starved it: behind,
# at an eighth of their weight, a part gets a ninth of what it asks for while the front asks for both cores, and the
# rest of the machine where the front leaves it (a CI run: a check behind failed with the others at 1.4 of 2 cores).
MOST_OTHERS = 0.5
# A check made again waits first for a quiet stretch: the others under MOST_OTHERS for QUIET_FOR s, for at most
# MOST_WAIT s; at most TRIES in all. The front's loads of `make yourapp` keep both cores busy for minutes: a check
# that never gets them is deferred and run alone at the end (tests/in_docker.py), cheaper than waiting them out (a
# run with 19 checks made again, each waiting up to 300 s, took 15 minutes longer behind than the one before).
QUIET_FOR, MOST_WAIT, TRIES = 5.0, 90.0, 4
REMEASURED = ROOT / ".test-run" / "remeasured.jsonl"
# How a check's last failure begins where the others had the CPU at every try: tests/in_docker.py then runs the test
# alone once the parts have ended, as a test of time is run, apart from them (not counted among the reruns).
PREMISE_NOT_MET = "premise not met"

T = TypeVar("T")


def machine_busy_seconds() -> float:
    """CPU time the machine's cores have spent on work so far (/proc/stat: user, nice, system, irq, softirq)."""
    fields = Path("/proc/stat").read_text().splitlines()[0].split()[1:]
    user, nice, system, _idle, _iowait, irq, softirq = (int(value) for value in fields[:7])
    return (user + nice + system + irq + softirq) / os.sysconf("SC_CLK_TCK")


def others_cpu_seconds() -> float | None:
    """The other parts' CPU time so far; None where this part runs alone."""
    if MINE in os.environ:
        return machine_busy_seconds() - cpu_seconds_of(Path(os.environ[MINE]))
    if THEIRS in os.environ:
        return cpu_seconds_of(Path(os.environ[THEIRS]))
    return None


class OthersWatch:
    """The other parts' CPU while a check runs, in cores: the most over any WINDOW s of it (or over all of it, where
    it is shorter). An average over a check of half a minute would hide the few seconds of a burst of load in front
    that starved it."""

    WINDOW, EVERY = 2.0, 0.25

    def __init__(self) -> None:
        self.samples: list[tuple[float, float]] = []
        self.stopped = threading.Event()
        self.sampler = threading.Thread(target=self._sample, daemon=True)
        if others_cpu_seconds() is not None:
            self._take()
            self.sampler.start()

    def _take(self) -> None:
        others = others_cpu_seconds()
        if others is not None:
            self.samples.append((time.monotonic(), others))

    def _sample(self) -> None:
        while not self.stopped.wait(self.EVERY):
            self._take()

    def cores(self) -> float | None:
        """The most the others used over any WINDOW s so far; None where this part runs alone."""
        self.stopped.set()
        if not self.samples:
            return None
        self._take()
        most, first = 0.0, 0
        for last, (now, used) in enumerate(self.samples):
            while first < last - 1 and now - self.samples[first + 1][0] >= self.WINDOW:
                first += 1  # the latest start that still spans a window
            then, before = self.samples[first]
            if now > then:
                most = max(most, (used - before) / (now - then))
        return most


def a_check(failure: BaseException) -> bool:
    """A check that failed (an assertion, or a wait for healthy within its time), or several at once: Hypothesis
    raises each distinct failure of its examples together, in a group."""
    if isinstance(failure, BaseExceptionGroup):
        return all(a_check(each) for each in failure.exceptions)
    return isinstance(failure, AssertionError | ScenarioError)


def machine_cores(cgroups: Path = Path("/sys/fs/cgroup/cpu")) -> float:
    """The cores this run may use: the machine's, or fewer where a CPU quota holds one of its CPU groups (cgroup v1
    cpu.cfs_quota_us: .ci/slower's 1.3 cores around the whole run)."""
    cores = float(os.cpu_count() or 1)
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        if "cpu" not in controllers.split(","):
            continue
        group = cgroups / path.strip("/")
        while group.is_relative_to(cgroups):
            quota, period = group / "cpu.cfs_quota_us", group / "cpu.cfs_period_us"
            if quota.exists() and period.exists() and int(quota.read_text()) > 0:
                cores = min(cores, int(quota.read_text()) / int(period.read_text()))
            if group == cgroups:
                break
            group = group.parent
    return cores


class PremiseNotMet(AssertionError):
    """A test's own premise, checked before its claim, did not hold (pools not yet full when the claim is about full
    pools): the server was not put where the claim is about, so the claim was not tested, right or wrong."""


def where_the_cpu_was_there(check: Callable[[], T]) -> T:
    """`check()`'s result. Where it failed (an assertion, or a stack not healthy in time) while the other parts used
    more than MOST_OTHERS of the machine, or where its own premise did not hold (PremiseNotMet), `check()` again once
    they have been quiet for QUIET_FOR s, each try recorded, TRIES in all. Any other failure fails at once; the last
    try's fails as a premise never met (tests/in_docker.py runs such a test again alone, where it must pass), and so
    does a starved try after which the others were not quiet within MOST_WAIT s: trying again beside them would
    measure them again (a CI run spent 363 s on four such tries of one test, deferred in the end all the same)."""
    most = MOST_OTHERS * machine_cores()
    for attempt in range(1, TRIES + 1):
        watch = OthersWatch()
        try:
            return check()
        except Exception as failure:
            if not a_check(failure):
                raise
            others = watch.cores()
            starved = others is not None and others > most
            if not starved and not isinstance(failure, PremiseNotMet):
                raise
            why = f"the other parts used {others:.2f} cores while it ran" if starved else "its own premise failed"
            if attempt == TRIES:
                raise AssertionError(
                    f"{PREMISE_NOT_MET} {TRIES} times: {why}, the last time too: {failure}"
                ) from failure
            waited, quiet = wait_for_quiet(most) if others is not None else (0.0, True)
            remeasured(others or 0.0, failure, waited)
            if starved and not quiet:
                times = f"{attempt} time{'s' if attempt > 1 else ''}"
                raise AssertionError(
                    f"{PREMISE_NOT_MET} {times}: {why}, and they were not quiet for {QUIET_FOR:g} s within "
                    f"{MOST_WAIT:g} s after: {failure}"
                ) from failure
    raise AssertionError("unreachable")  # the last try returns or raises


def wait_for_quiet(most: float) -> tuple[float, bool]:
    """Until the other parts have used at most `most` cores over QUIET_FOR s, or MOST_WAIT s: the seconds waited, and
    whether they were quiet."""
    started = time.monotonic()
    while time.monotonic() - started < MOST_WAIT:
        before, at = others_cpu_seconds() or 0.0, time.monotonic()
        time.sleep(QUIET_FOR)
        if ((others_cpu_seconds() or 0.0) - before) / (time.monotonic() - at) <= most:
            return time.monotonic() - started, True
    return time.monotonic() - started, False


def remeasured(others: float, failure: Exception, waited: float) -> None:
    test = os.environ.get("PYTEST_CURRENT_TEST", "?").rsplit(" ", 1)[0]
    message = " ".join(str(failure).split())[:300]
    print(f"{test}: the other parts used {others:.2f} cores while it ran; {waited:.0f} s until quiet: {message}")
    REMEASURED.parent.mkdir(exist_ok=True)
    with REMEASURED.open("a") as record:
        record.write(json.dumps({"test": test, "others_cores": round(others, 2), "failure": message}) + "\n")


def premise_checked(test: Callable[..., None]) -> Callable[..., None]:
    """A test of time made again, whole, where it failed while the other parts had the CPU (where_the_cpu_was_there)."""

    @functools.wraps(test)
    def made_where_the_cpu_was_there(*args: object, **kwargs: object) -> None:
        where_the_cpu_was_there(lambda: test(*args, **kwargs))

    return made_where_the_cpu_was_there
