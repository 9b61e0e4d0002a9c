"""Every scenario end to end: build, start healthy, answer exactly, and behave as the tutorial teaches.

Timings assert behaviour with wide margins (serialised against concurrent), never a speed target.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from bench.compose import RunningScenario
from bench.scenarios import SCENARIOS, load_targets
from tests.conftest import fetch, load

pytestmark = pytest.mark.docker

BONUS = "bonus-psycopg2-gevent"
BAD_QUERIES = ["delay=abc", "delay=-1", "delay=31", "delay=nan", "delay=inf", "delay=%ff%fe"]


@pytest.fixture(scope="module", params=SCENARIOS)
def scenario(request: pytest.FixtureRequest) -> Iterator[RunningScenario]:
    # Torn down after its tests, also when one of them fails.
    with RunningScenario(request.param) as running:
        yield running


def test_answers_exactly_after_the_delay(scenario: RunningScenario) -> None:
    for target in load_targets(scenario.scenario):
        answer = fetch(f"{target.url}?delay=0.4")
        assert (answer.status, answer.body) == (200, target.expected_body(0.4)), target.name
        assert answer.seconds >= 0.4, target.name


def test_bad_input_is_a_400_with_a_message(scenario: RunningScenario) -> None:
    for target in load_targets(scenario.scenario):
        for query in BAD_QUERIES:
            answer = fetch(f"{target.url}?{query}")
            assert answer.status == 400, (target.name, query, answer)
            assert "delay must be" in answer.body and "Traceback" not in answer.body, (target.name, query)


def test_concurrency_is_what_the_server_promises(scenario: RunningScenario) -> None:
    targets = load_targets(scenario.scenario)
    if scenario.scenario == BONUS:
        # The same gevent server twice: only psycopg2's blocking libpq calls tell them apart.
        timings = {}
        for target in targets:
            elapsed, answers = load(f"{target.url}?delay=1", requests_total=10, concurrency=10)
            assert all(a.status == 200 for a in answers), target.name
            timings[target.name] = elapsed
        # Ten half-second pg_sleeps in turn take 5 s; side by side about 1 s in all.
        assert timings["psycopg2-unpatched"] >= 0.9 * 10 * 0.5, timings
        assert timings["psycopg2-unpatched"] > 2.5 * timings["psycopg2-patched"], timings
        return
    for target in targets:
        if target.concurrency == 1:
            elapsed, answers = load(f"{target.url}?delay=0.5", requests_total=4, concurrency=4)
            assert elapsed >= 0.9 * 4 * 0.5, f"{target.name} should serialise: {elapsed:.2f} s"
        else:
            elapsed, answers = load(f"{target.url}?delay=1", requests_total=50, concurrency=50)
            # In turn, 50 one-second requests take 50 s; side by side, one or two.
            assert elapsed < 10, f"{target.name} should serve 50 clients at once: {elapsed:.2f} s"
        assert all(a.status == 200 for a in answers), target.name


def test_slow_api_stopped_gives_502_without_hanging(scenario: RunningScenario) -> None:
    scenario.stop("slow_api")
    try:
        for target in load_targets(scenario.scenario):
            answer = fetch(f"{target.url}?delay=0.2", timeout=15)
            assert answer.status == 502, (target.name, answer)
            assert answer.body.count("\n") == 1 and "slow_api" in answer.body, (target.name, answer.body)
            assert answer.seconds < 10, target.name
    finally:
        scenario.start("slow_api")
