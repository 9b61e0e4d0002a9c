"""docs/load-generators.md's facts (bench/pages/loadgens.py) on the committed sets it cites: ab's three runs of every
target, hey's one and wrk's one, on 2026-11-23; each tool's ceiling from its model."""

from __future__ import annotations

import pytest

from bench.pages import facts, loadgens
from bench.pages.render import ROOT

ROUTER = ["uwsgi-sync", "uwsgi-gevent"]
UNPATCHED = ["psycopg2-unpatched", "psycopg3-before-patch"]


@pytest.fixture(scope="module")
def ab() -> facts.Facts:
    return facts.Facts.of(ROOT / "results" / "2026-11-23-repeat3")


@pytest.fixture(scope="module")
def hey() -> facts.Facts:
    return facts.Facts.of(ROOT / "results" / "2026-11-23-hey")


@pytest.fixture(scope="module")
def wrk() -> facts.Facts:
    return facts.Facts.of(ROOT / "results" / "2026-11-23-wrk")


def test_each_tool_s_ceiling_at_the_tutorial_s_load_is_its_model_s() -> None:
    # ab's solo first request costs one round of 11; wrk loses the round in progress at its 10 s
    said = [loadgens.rate(loadgens.ceiling(tool, 2000, 200, 1.0)) for tool in ("ab", "hey", "wrk", "h2load")]
    assert said == ["181.8", "200", "180", "200"]
    assert (loadgens.wrk_seconds(2000, 200, 1.0), loadgens.wrk_seconds(10, 5, 1.0)) == (10, 2)
    assert loadgens.wrk_last_round(2000, 200, 1.0) == "10 / 9"


def test_the_three_sets_ran_on_one_machine_within_the_hour(ab: facts.Facts, hey: facts.Facts, wrk: facts.Facts) -> None:
    sets = [ab, hey, wrk]
    assert loadgens.day(sets) == "2026-11-23"
    assert loadgens.same(sets, "cpu_count") == "2"
    assert loadgens.version(loadgens.same(sets, "docker_version")) == "20.10.24"
    assert loadgens.version(loadgens.same(sets, "compose_version")) == "2.26.1"
    # hey started at 14:42:31, ab's three runs at 15:43:57: when the last one ended, no set says
    assert loadgens.started_within_minutes(sets) == 62
    with pytest.raises(facts.FactError):
        loadgens.same(sets, "git_commit")  # hey and wrk ran at one commit, ab's runs at another
    assert [loadgens.times_said(count) for count in (1, 2, 3)] == ["once", "twice", "3 times"]


def test_a_cell_of_the_cross_tool_table_and_why_a_run_failed(
    ab: facts.Facts, hey: facts.Facts, wrk: facts.Facts
) -> None:
    assert loadgens.cell(ab, "slow_api-alone", 200) == "177.7 (174.8–177.7): 98%, **1.00**"
    assert loadgens.cell(hey, "gunicorn-sync", 200) == "181.0: 90%, **0.92**"
    # uWSGI's router answered under wrk, and wrk counted a read error per answer
    assert loadgens.cell(wrk, "uwsgi-sync", 200) == "**FAILED**: 178.6 answered per s, 1800 read errors"
    assert loadgens.cell(wrk, "psycopg2-patched-uwsgi", 5) == "**FAILED**: 2.50 answered per s, 5 read errors"
    # the unpatched app blocks its only worker: not one answer in wrk's 2-second run
    assert loadgens.cell(wrk, "psycopg2-unpatched", 5) == "**FAILED**: no answer in its 2 s"
    problem = loadgens.way_of(wrk, "uwsgi-sync", 200).record.problem
    assert loadgens.error_kinds(problem) == {"connect": 0, "read": 1800, "write": 0, "timeout": 0}
    assert loadgens.error_kinds(None) == {}
    # docker-proxy's CPU per request: a reconnect per request for gunicorn's threads; too few requests at 10 / 5
    assert loadgens.cpu_ms(hey, "gunicorn-sync", "docker-proxy", 200) == "0.47"
    assert loadgens.cpu_ms(hey, "slow_api-alone", "docker-proxy", 5) == "–"
    assert [loadgens.load(way) for way in loadgens.ways(ab)[:2]] == ["10 / 5", "2000 / 200"]


def test_from_ab_to_hey_nobody_gained_at_the_tutorial_s_load(ab: facts.Facts, hey: facts.Facts) -> None:
    changed = loadgens.changes(ab, hey, 200)
    assert loadgens.ahead(changed) == []
    assert loadgens.level(changed) == [
        "nginx-gunicorn-gevent", "nginx-uwsgi-gevent", "gunicorn-gevent-pypy", "nginx-gunicorn-sync",
    ]  # fmt: skip
    fallen = loadgens.fell(changed)
    assert [change.target for change in fallen[:3]] == ["quart-hypercorn", "gunicorn-gevent", "gevent-pywsgi"]
    assert facts.spread_span(loadgens.points(fallen), 0) == "1 to 6"  # granian 0.978 -> 0.968, hypercorn 6.4
    assert loadgens.below_every_run(fallen[:3]) == "each"
    # Quart on uvicorn fell to 0.935, inside ab's 0.923 to 0.973: not every one that fell is below all its ab runs
    assert loadgens.below_every_run(fallen) not in ("each", "none of them")
    assert facts.fixed(loadgens.widest_spread(ab, 200), 1) == "3.6"
    # At the bonus's 10 / 5 a hundredth is noise, and one target lies above its ab runs: hence "at 2000 / 200"
    assert [change.target for change in loadgens.ahead(loadgens.changes(ab, hey, 5))] == ["psycopg3-after-patch"]
    assert facts.fixed(loadgens.widest_spread(ab, 5), 1) == "8.6"
    earlier = facts.Facts.of(ROOT / "results" / "2026-11-23-all")
    assert facts.fixed(loadgens.points_apart(hey, earlier, "nginx-gunicorn-gevent", 200), 0) == "2"


def test_targets_are_named_a_whole_group_at_a_time() -> None:
    groups = [(["nginx-gunicorn-gevent", "nginx-uwsgi-gevent"], "Nginx in front of either server"), (["x"], "X")]
    assert loadgens.named(["nginx-uwsgi-gevent", "x", "nginx-gunicorn-gevent"], groups) == (
        "Nginx in front of either server and X"
    )
    with pytest.raises(facts.FactError):
        loadgens.named(["nginx-uwsgi-gevent"], groups)  # one of the two Nginx targets only
    with pytest.raises(facts.FactError):
        loadgens.named(["x", "y"], groups)  # a target the prose has no name for
    assert loadgens.exactly(["a", "b"], ["b", "a"]) == ""
    with pytest.raises(facts.FactError):
        loadgens.exactly(["a", "b"], ["a", "c"])


def test_six_targets_made_hey_reconnect(hey: facts.Facts) -> None:
    again = loadgens.reconnecting(hey, 200)
    assert sorted(again) == sorted(["devserver-threaded", "gunicorn-sync", "sync-view", "async-view", *ROUTER])
    kept = loadgens.reusing(hey, 200)
    assert "slow_api-alone" not in kept and len(kept) == 10
    assert facts.spread_span(loadgens.proxy_span(hey, 200, kept)) == "0.11 to 0.18"
    assert facts.spread_span(loadgens.proxy_span(hey, 200, again)) == "0.38 to 0.60"
    assert facts.fixed(loadgens.proxy_ms(hey, 200)["slow_api-alone"]) == "0.10"
    assert (loadgens.most(len(kept), len(kept + again)), loadgens.most(8, 16)) == ("most", "8 of 16")


def test_what_went_wrong_under_wrk(hey: facts.Facts, wrk: facts.Facts) -> None:
    assert loadgens.failed(wrk) == [*ROUTER, "psycopg2-unpatched", "psycopg2-patched-uwsgi", "psycopg3-before-patch"]
    assert loadgens.answered(wrk, ROUTER) == "all their requests"  # 1800: 9 rounds of 200, wrk's ceiling
    assert loadgens.rates(wrk, ROUTER) == "178.6 and 179.6"
    assert facts.spread_span(loadgens.read_errors(wrk, ROUTER), 0) == "1800"
    assert facts.spread_span(loadgens.field_span(wrk, ROUTER, "complete"), 0) == "1800"
    assert facts.spread_span(loadgens.field_span(wrk, ROUTER, "non2xx"), 0) == "0"
    assert loadgens.per_answer(wrk, ROUTER, "read error") == "one read error per answer"
    assert loadgens.per_answer(wrk, ["nginx-uwsgi-gevent"]) == "fewer than its answers"  # no read error at all
    assert loadgens.counted_none(hey, ROUTER) == "none"
    assert loadgens.counted_none(wrk, ROUTER) == "3600"
    assert (loadgens.errors_said(wrk, "nginx-uwsgi-gevent"), loadgens.errors_said(wrk, "uwsgi-sync")) == (
        "no error",
        "1800 errors",
    )
    assert loadgens.no_answer(wrk, UNPATCHED) == "no answer at all"
    assert loadgens.no_answer(wrk, ["psycopg2-patched-uwsgi"]) == "5 answers"
    assert loadgens.no_answer(wrk, ["psycopg2-unpatched", "psycopg2-patched-uwsgi"]) == "0 answers and 5 answers"
    with pytest.raises(facts.FactError):
        loadgens.record_of(wrk, "no-such-target")
