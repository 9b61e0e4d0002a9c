"""The bonus apps' bounded Postgres pools, against the real containers, with several times more clients than
Postgres takes.

Postgres accepts 100 connections (max_connections), 3 of them kept for superusers. An app that opens one per
concurrent request is refused past that ("too many clients") and answers 503 while Postgres is fine. Each
bonus app process holds at most POSTGRES_POOL_MAX connections, and a request waits for a free one for up to
POSTGRES_POOL_TIMEOUT seconds: only a wait longer than that is a 503, which then names the pool.
"""

from __future__ import annotations

import threading
from collections import Counter

import pytest
import yaml

from bench.containers import postgres
from bench.containers.compose import RunningScenario
from bench.containers.scenarios import REGISTRY, SCENARIOS, Target, load_targets
from tests.conftest import Answer, load
from tests.cpu_share import PremiseNotMet, premise_checked

pytestmark = pytest.mark.docker

CLIENTS = 300  # three times Postgres's max_connections, one request each, all at once

COOPERATIVE_TARGETS = [
    pytest.param(target, id=target.name)
    for scenario in SCENARIOS
    if REGISTRY[scenario].uses_postgres
    for target in load_targets(scenario)
    if target.postgres == "cooperative"
]


def pool_maxima(running: RunningScenario) -> dict[str, int]:
    """Each bonus app's most Postgres connections at once, as Compose sets them: its processes x POSTGRES_POOL_MAX."""
    services = yaml.safe_load(running.compose("config").stdout)["services"]
    return {
        target.service: target.workers * int(services[target.service]["environment"]["POSTGRES_POOL_MAX"])
        for target in load_targets(running.scenario)
    }


class SessionPeak:
    """Samples Postgres's client sessions in the background while the `with` block runs; `peak` is the most seen."""

    def __init__(self, running: RunningScenario) -> None:
        self.count = postgres.session_counter(running)
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(0.05):
            self.peak = max(self.peak, self.count()[0])

    def __enter__(self) -> SessionPeak:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        self._thread.join()


def refused_by_postgres(running: RunningScenario) -> list[str]:
    log = running.compose("logs", "--no-color", "postgres").stdout
    return [line for line in log.splitlines() if "too many clients" in line]


def summary(target: Target, delay: float, answers: list[Answer], peak: int) -> str:
    statuses = ", ".join(f"{count} x {status}" for status, count in sorted(Counter(a.status for a in answers).items()))
    longest = max(a.seconds for a in answers)
    return f"{target.name}: {CLIENTS} clients at delay={delay:g} ({statuses}), longest {longest:.2f} s, {peak} sessions"


@pytest.mark.parametrize("target", COOPERATIVE_TARGETS)
def test_many_more_clients_than_postgres_takes_all_wait_their_turn(target: Target) -> None:
    # pg_sleep(0.1) per request: 300 requests through 30 connections take about 1 s, well within the wait allowed.
    delay = 0.2
    with RunningScenario(target.scenario) as running:
        most_sessions = sum(pool_maxima(running).values())
        with SessionPeak(running) as sessions:
            _, answers = load(f"{target.url}?delay={delay:g}", requests_total=CLIENTS, concurrency=CLIENTS)
        print(summary(target, delay, answers, sessions.peak))
        failed = [a for a in answers if (a.status, a.body) != (200, target.expected_body(delay))]
        assert not failed, f"{len(failed)} of {CLIENTS} failed, e.g. {failed[0]}"
        assert not refused_by_postgres(running)
        # Every app of the scenario together, the idle connections of the others included.
        assert 0 < sessions.peak <= most_sessions, (sessions.peak, most_sessions)


CONNECT_TIMEOUT = 3.0  # psycopg2/app.py's and psycopg3/app.py's connect_timeout


@pytest.mark.parametrize("target", COOPERATIVE_TARGETS)
@premise_checked
def test_a_wait_longer_than_the_pool_timeout_is_a_503_naming_the_pool(
    target: Target, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Each request holds its connection for 2 s; all but the first pool's worth wait longer than 0.5 s. A 503 comes
    # after the pool's 0.5 s, well before the 4 s a request that waited for Postgres would take: a margin wide
    # enough for 300 client threads on two busy cores.
    delay, timeout = 4.0, 0.5
    monkeypatch.setenv("POSTGRES_POOL_TIMEOUT", f"{timeout:g}")
    with RunningScenario(target.scenario) as running:
        pool_max = pool_maxima(running)[target.service]
        with SessionPeak(running) as sessions:
            _, answers = load(f"{target.url}?delay={delay:g}", requests_total=CLIENTS, concurrency=CLIENTS)
        print(summary(target, delay, answers, sessions.peak))
        assert not refused_by_postgres(running)
        # The premise, Postgres taking the pool's first connections: a CI run saw psycopg 3's app answer "postgres is
        # unavailable" beside the other parts' load, a connect that did not finish within its timeout.
        unconnected = [a for a in answers if a.body == "postgres is unavailable\n" and a.seconds >= CONNECT_TIMEOUT]
        if unconnected:
            raise PremiseNotMet(f"{len(unconnected)} connects to Postgres took {CONNECT_TIMEOUT:g} s or more")
        statuses = Counter(a.status for a in answers)
        assert set(statuses) == {200, 503} and statuses[200] >= pool_max, statuses
        for answer in answers:
            if answer.status == 200:
                assert answer.body == target.expected_body(delay)
            else:
                assert answer.body == f"postgres pool: no free connection within {timeout:g} s ({pool_max} in use)\n", (
                    answer
                )
                # It waited for the pool, and not for Postgres or slow_api.
                assert timeout <= answer.seconds < delay, answer
