"""README.md and docs/recommend.md are their templates (pages/) rendered from the committed sets, so an edit of a
figure or a comparison word in a page fails here; and the functions that compute those words, on real records of
the set the pages cite."""

from __future__ import annotations

from dataclasses import replace
from functools import cache

import pytest

from bench.pages import events, facts, grid, latency, rows
from bench.pages.render import PAGES, ROOT, render

RECOMMEND = ROOT / "results" / "2026-11-27-recommend"
CPU_200 = "c=200 cpu_units=3 placement=every_core"


@pytest.fixture(scope="module")
def recommend() -> facts.Facts:
    return facts.Facts.of(RECOMMEND)


@cache
def rendered() -> dict[str, str]:
    return render()  # every page at once: once for all of this module's tests


@pytest.mark.parametrize("page", PAGES)
def test_each_page_is_its_rendering_from_the_committed_sets(page: str) -> None:
    assert (ROOT / page).read_text() == rendered()[page], f"{page} differs from pages/{page}.j2: run `make pages`"


def test_one_gevent_process_per_core_is_ahead_of_the_threads_with_cpu_work(recommend: facts.Facts) -> None:
    at_load = recommend.where(CPU_200)
    assert at_load.compare("gunicorn-gevent-2-workers", "gunicorn-sync") == "ahead of"
    assert at_load.compare("gunicorn-sync", "gunicorn-gevent-2-workers") == "behind"


def test_uwsgi_per_core_is_within_the_spread_of_the_threads_with_cpu_work(recommend: facts.Facts) -> None:
    # 125.65 to 137.05 requests per second against the threads' 120.90 to 133.75: not told apart
    at_load = recommend.where(CPU_200)
    assert at_load.compare("uwsgi-gevent-2-workers", "gunicorn-sync") == "within the spread of"
    assert at_load.compare("gunicorn-sync", "uwsgi-gevent-2-workers") == "within the spread of"


@pytest.mark.parametrize(
    ("first", "second", "word"),
    [
        (facts.Spread(2, 1.5, 2.5), facts.Spread(1, 0.5, 1.4), "ahead of"),
        (facts.Spread(2, 1.5, 2.5), facts.Spread(1, 0.5, 1.5), "within the spread of"),
        (facts.Spread(1, 0.5, 1.4), facts.Spread(2, 1.5, 2.5), "behind"),
    ],
)
def test_the_comparison_word_comes_from_the_ranges_not_the_medians(
    first: facts.Spread, second: facts.Spread, word: str
) -> None:
    assert facts.comparison(first, second) == word


def test_quantifiers() -> None:
    assert [facts.quantifier(m, 3) for m in (3, 2, 0)] == ["every", "2 of 3", "none"]
    assert [facts.quantified(m, 3, "run") for m in (3, 1, 0)] == ["every run", "1 of 3 runs", "no run"]


def test_a_spread_of_medians_a_ratio_and_a_failed_count_of_the_set(recommend: facts.Facts) -> None:
    assert facts.spread_span(
        recommend.where("c=200 cpu_units=0 target!=slow_api-alone placement=every_core").medians()
    ) == ("0.92 to 0.98")
    assert facts.times(recommend.where(CPU_200).ratio("gunicorn-gevent-2-workers", "gunicorn-gevent")) == "x1.70"
    assert recommend.where("c=5000 placement=every_core").failed_runs("gunicorn-sync") == "every run"
    assert recommend.where("c=1000 cpu_units=0 placement=every_core").failed_runs("mod-wsgi-subinterpreters") == (
        "1 of 3 runs"
    )


def test_bounds_are_worded_as_bounds_and_the_load_generator_has_its_own(recommend: facts.Facts) -> None:
    # The clients' bound is ab's own ceiling for the run's command (5000 requests in rounds of 1000 clients, each
    # round the wait and the CPU), not clients / (wait + CPU): 832 at 1000 clients, below the CPU's 980.
    one_process = recommend.bound("gunicorn-gevent", 1000, 16)
    assert (facts.at_most(one_process.rps), one_process.limit) == ("at most 832", "clients")
    assert recommend.clients_alone("gunicorn-gevent", 1000) == pytest.approx(999, abs=1)
    at_5000 = recommend.bound("gunicorn-gevent-2-workers", 5000, 16)
    assert (facts.at_most(at_5000.rps), at_5000.limit) == ("at most 3329", "clients")
    assert facts.fixed(recommend.clients_alone("gunicorn-gevent-2-workers", 5000), 0) == "4994"
    assert facts.at_most(recommend.bound("gunicorn-gevent", 5000, 16).rps) == "at most 969"  # its CPU, 1 process
    # ab's own ceiling at each load (bench/models/ceiling.py), with no CPU in the request
    assert facts.at_most(recommend.where("c=1000 cpu_units=0").loadgen_ceiling()) == "at most 833"
    assert facts.at_most(recommend.where("c=5000").loadgen_ceiling()) == "at most 3333"


def test_the_model_checked_from_one_core_bounds_what_two_cores_did(recommend: facts.Facts) -> None:
    checked = recommend.from_one_core(1000)
    assert {check.one.label for check in checked} == {
        "gunicorn-gevent", "nginx-gunicorn-gevent", "uwsgi-gevent-1-workers", "gunicorn-sync", "granian-sync",
        "quart-uvicorn",
    }  # fmt: skip
    assert all(check.one.placement == "one core" and check.every.placement == "every core" for check in checked)
    assert facts.within_bounds(checked) == len(checked)
    # A bound lower than what two cores did is counted as missed.
    check = checked[0]
    lower = replace(check, bound=replace(check.bound, rps=check.every_rps - 1))
    assert facts.within_bounds([lower]) == 0


def test_a_selection_or_target_the_set_lacks_is_an_error(recommend: facts.Facts) -> None:
    with pytest.raises(facts.FactError):
        recommend.where("c=7")
    with pytest.raises(facts.FactError):
        recommend.where(CPU_200).median("no-such-way")


REPEAT3 = ROOT / "results" / "2026-11-25-repeat3"


def test_the_rows_of_a_repeated_run_as_docs_every_way_states_them() -> None:
    found = facts.Facts.of(REPEAT3)
    c200 = found.where("c=200")
    # gunicorn's threads at 200 clients: 164.2 to 167.7 requests per second around a median of 164.5
    threads = rows.way_of(found, "gunicorn-sync", 200)
    assert (rows.throughput(threads), f"{rows.spread_percent(threads):.1f}") == ("164.5 (164.2–167.7)", "2.2")
    assert rows.share_range(found, threads) == "0.93 (0.93–0.95)" and rows.with_share(threads) == "164.5 (0.93)"
    # uWSGI's gevent processes: each run above every run of three servers, overlapping two others
    said = rows.standing_against(
        c200, "uwsgi-gevent", [("granian-sync", "granian"), ("gunicorn-sync", "threads"), ("mod-wsgi-sync", "mod_wsgi")]
    )
    assert said == "within the spread of granian, and ahead of threads and mod_wsgi"
    assert rows.overlapping_pairs(c200, ["granian-sync", "uwsgi-sync", "mod-wsgi-sync"]) == (3, 3)
    assert rows.overlapping_pairs(c200, ["uwsgi-gevent", "gunicorn-sync", "mod-wsgi-sync"]) == (1, 3)
    assert rows.pairs_behind(c200, ["gunicorn-gevent-pypy"], ["uwsgi-gevent", "gunicorn-sync"]) == (2, 2)
    assert rows.unsteady(found) == (92, 174)  # as the set's own results.md counts them, failed runs included
    probe = rows.probe_seconds(found)
    assert (facts.fixed(probe.low), facts.fixed(probe.high)) == ("0.07", "0.30")
    with pytest.raises(facts.FactError):
        rows.spread_percent(rows.way_of(found, "mod-wsgi-sync", 1000))  # a failed row has no spread


def test_the_walkthrough_s_facts_of_a_row_and_of_slow_clients() -> None:
    found = facts.Facts.of(REPEAT3)
    assert rows.highest(found.where("c=200"), ["gunicorn-sync", "uwsgi-gevent", "gunicorn-gevent"]) == "uwsgi-gevent"
    unpatched = rows.way_of(found, "psycopg2-unpatched", 5)
    assert (rows.rps(unpatched), rows.efficiency_percent(unpatched)) == ("1.52", "46")
    assert facts.spread_span(rows.thread_peaks(found, ["quart-uvicorn", "quart-hypercorn"], 200), 0) == "5 to 7"
    slow = facts.Facts.of(ROOT / "results" / "2026-11-23-slowclients")
    # gunicorn's 4 x 50 threads: 10 idle connections left a normal request alone, 25 delayed it
    assert rows.fewest_delaying(slow, "gunicorn-sync", "idle") == 25
    assert rows.fewest_delaying(slow, "gunicorn-sync", "head") == 200
    with pytest.raises(facts.FactError):
        rows.fewest_delaying(slow, "nginx-gunicorn-sync", "head")  # Nginx in front: no count of heads delayed it


def test_a_slow_clients_row_is_one_cell_for_every_target_it_names() -> None:
    slow = facts.Facts.of(ROOT / "results" / "2026-11-23-slowclients")
    assert rows.slow_cell(slow, ["gunicorn-sync"], "idle") == "**25** (5.0 s)"  # every probe answered, late
    assert rows.slow_cell(slow, ["sync-view", "async-view"], "body") == "**10**"  # no answer within the probe's time
    with pytest.raises(facts.FactError):
        rows.slow_cell(slow, ["gunicorn-sync", "nginx-gunicorn-sync"], "head")  # **200** against none up to 1600
    assert rows.slow_every_kind(slow, "nginx-gunicorn-sync") == "none up to 1600"
    with pytest.raises(facts.FactError):
        rows.slow_every_kind(slow, "granian-sync")  # its bodies never delayed it, its heads did
    gevent = slow.where("mode=gevent").names()
    assert rows.slowest(slow, gevent, 1600) == "gunicorn-gevent-pypy"
    new = facts.Facts.of(ROOT / "results" / "2026-11-24-slowclients-new-ways")
    assert (rows.fewest_delaying(new, "mod-wsgi-sync", "head"), rows.most_undelaying(new, "mod-wsgi-sync", "head")) == (
        400,
        100,
    )


def test_i_hate_money_s_writes_monitor_and_failed_load() -> None:
    money = facts.Facts.of(ROOT / "results" / "2026-11-28-yourapp-ihatemoney")
    assert (rows.writes(money, "acknowledged"), rows.writes(money, "found"), rows.writes(money, "lost")) == (
        749,
        749,
        0,
    )
    blocked = rows.blocked_by_way(money)
    assert list(blocked)[0] == "uwsgi-gevent" and sorted(blocked) == sorted(money.where("mode=gevent").names())
    assert rows.failed_requests(money, "uwsgi-gevent", 10, 1) == 7
    assert rows.failed_requests(money, "gunicorn-gevent", 10, 1) == 0


def test_a_latency_step_as_docs_latency_md_shows_it() -> None:
    lat = facts.Facts.of(ROOT / "results" / "2026-11-23-latency")
    starved = latency.step(lat, "devserver-threaded", 1.5)  # 48 refused, 1 closed, fewer answers than sent
    assert (latency.offered(starved), latency.achieved(starved), latency.failures(starved)) == (
        "348 (150%)",
        "**312.2**",
        "closed 1, connect 48",
    )
    assert (latency.ms(starved.p50_ms), latency.ms(starved.p99_ms)) == ("1 413", "failed")
    assert latency.kept_up(lat, 0.9) == (16, 16)
    assert facts.spread_span(latency.p99_span(lat, ["quart-uvicorn", "quart-gunicorn"], 0.9), 0) == "1307 to 1899"
    assert latency.lags(lat)[0].target == "devserver-threaded"


def test_where_a_latency_step_kept_up_is_checked_against_the_steps() -> None:
    lat = facts.Facts.of(ROOT / "results" / "2026-11-23-latency")
    assert latency.kept(lat, "gunicorn-gevent", 1.1) == "kept up"  # 650.39 of 650
    assert latency.kept(lat, "gunicorn-gevent", 1.25) == "did not keep up"  # 608.46 of 738
    assert latency.first_behind(lat, "devserver-threaded") == 1.5 and latency.first_behind(lat, "gevent-pywsgi") == 1.25
    assert latency.kept_up_at_every_rate(lat, "gunicorn-gevent-pypy") == ""
    with pytest.raises(facts.FactError, match="did not keep up at 125%"):
        latency.kept_up_at_every_rate(lat, "gunicorn-gevent")
    assert latency.bent_first(lat, "nginx-gunicorn-gevent", "gunicorn-gevent") == ""  # 110 % against 125 %
    with pytest.raises(facts.FactError, match="did not fall behind before"):
        latency.bent_first(lat, "gunicorn-gevent", "nginx-gunicorn-gevent")
    with pytest.raises(facts.FactError, match="granian-sync"):  # granian left requests unanswered at 150 % too
        latency.only_these_failed(lat, 1.5, ["quart-uvicorn"], aside=["devserver-threaded"])
    assert latency.lagged_most(lat, "devserver-threaded") == ""
    with pytest.raises(facts.FactError, match="furthest behind"):
        latency.lagged_most(lat, "uwsgi-gevent")


def test_each_unsteady_measurement_beside_its_steady_repeats() -> None:
    shared, pinned = (facts.Facts.of(ROOT / "results" / f"2026-11-23-cores-{how}") for how in ("shared", "pinned"))
    gevent = rows.unsteady_beside_steady(shared)
    assert [(r.target, r.role, r.before, r.after, r.share) for r in gevent] == [
        ("gunicorn-gevent", "server", 0.1609, 0.085, 0.735)
    ]
    assert gevent[0].standing == "ahead of" and round(gevent[0].off_by, 4) == round(0.735 / 0.728 - 1, 4)
    by_target = {(r.target, r.share): r for r in rows.unsteady_beside_steady(pinned)}
    assert by_target["gunicorn-sync", 0.24].standing == "within the spread of"  # bounded by its threads
    assert by_target["gunicorn-sync", 0.24].off_by == 0
    assert by_target["gunicorn-gevent", 0.593].standing == "behind"  # its steady repeats 0.619 and 0.628
    assert len(rows.unsteady_beside_steady(pinned)) + len(gevent) == rows.unsteady(shared)[0] + rows.unsteady(pinned)[0]


def test_verified_ways_and_a_cost_said_as_more() -> None:
    money = facts.Facts.of(ROOT / "results" / "2026-11-28-yourapp-ihatemoney")
    assert rows.verified_ways(money) == (7, 7)
    rep = facts.Facts.of(ROOT / "results" / "2026-11-25-repeat3")
    assert rows.costs_more(rep, "mod-wsgi-sync", "gunicorn-sync", 200) == ""
    with pytest.raises(facts.FactError, match="costs no more"):
        rows.costs_more(rep, "gunicorn-sync", "mod-wsgi-sync", 200)


def test_a_lab_s_field_is_its_one_record_s() -> None:
    labs = facts.Facts.of(ROOT / "results" / "2026-11-23-labs")
    assert rows.field(labs, "backlog-10", "connects_over_1s") == 871
    assert rows.field(labs, "requests-pool-10", "connections_opened") == [200, 191]
    with pytest.raises(facts.FactError):
        rows.field(labs, "backlog-10", "pool_full_warnings")  # not a field of that lab's records


def test_the_map_s_cells_as_docs_map_md_shows_them() -> None:
    found = facts.Facts.of(ROOT / "results" / "2026-11-23-map")
    by_cell = {(row.delay_ms, row.cpu_units, row.clients): row for row in grid.grid_rows(found)}
    led = by_cell[500, 0, 500]  # uWSGI's gevent processes 10 % ahead of the runner-up
    assert (led.winner, led.lead, led.pair) == ("uwsgi-gevent 621/s", "x1.10", "541 vs 302 (x1.80)")
    assert by_cell[500, 0, 10].winner == "all at the ceiling, 17/s"  # every target at 95 % of ab's ceiling or more
    assert by_cell[500, 2, 10].winner == "all within 8 %, 16-17/s"  # a tie, not at the ceiling
    assert by_cell[20, 2, 10].winner == "uwsgi-gevent 208/s" and by_cell[20, 2, 10].lead == "tie"  # the last far behind
    assert grid.won_or_tied(found, "uwsgi-gevent", grid.cells_where(found, cpu=True)) == (8, 8)
    assert grid.won_or_tied(found, "gunicorn-gevent", grid.cells_where(found, cpu=True))[0] < 8


def test_an_incident_s_cells_over_its_repeats() -> None:
    sets = [facts.Facts.of(ROOT / "results" / name) for name in ("2026-11-25-incidents", "2026-11-25-incidents-hog")]
    assert events.lost(sets, "gunicorn-sync", "kill-worker") == "17–33"
    assert events.back_within(sets, "gunicorn-sync", "kill-container") == "never"  # no restart policy: down for good
    assert events.back_within(sets, "gunicorn-sync", "max-requests") == "–"  # recycling has no single moment
    assert events.back_within(sets, "gunicorn-gevent", "hog") == "9.8"  # from the hog's own set
    assert events.lost(sets, "gunicorn-sync", "deploy") == "–"  # not an event of that way
    assert events.said(events.lost_in(sets, ["granian-sync"], "kill-worker")) == "7,645 to 7,657"


def test_an_incident_s_words_are_checked_against_every_repeat() -> None:
    sets = [facts.Facts.of(ROOT / "results" / name) for name in ("2026-11-25-incidents", "2026-11-25-incidents-hog")]
    assert events.most(sets, ["gunicorn-sync", "gunicorn-gevent"], "reload") == "nothing"
    assert events.most(sets, ["quart-uvicorn"], "reload") == "at most one request"  # 1 and 0
    assert events.most(sets, ["uwsgi-gevent"], "max-requests") == "at most 18 requests"
    assert events.in_flight(sets, ["gunicorn-gevent"], "kill-worker") == "all 100 in flight"
    # Nginx in front of the same process: 90 502s and a reset in one run, 100 502s in the other.
    assert events.in_flight(sets, ["nginx-gunicorn-gevent"], "kill-worker") == "91 to 100 of the 100 in flight"
    assert events.in_flight(sets, ["gunicorn-sync"], "recreate") == "none of the 100 in flight"
    assert events.with_losses(sets, ["nginx-gunicorn-gevent"], "max-requests") == "1 of 2 runs"
    assert events.only_what_it_held(sets, ["gunicorn-sync", "gunicorn-gevent"], "kill-worker") == ""
    with pytest.raises(facts.FactError, match="before it"):  # uWSGI's router reset 3 and 9 before the kill
        events.only_what_it_held(sets, ["uwsgi-gevent"], "kill-worker")
    assert events.beyond_in_flight(sets, ["granian-sync"], "kill-worker-respawn") == ""
    with pytest.raises(facts.FactError, match="lost of 100 in flight"):
        events.beyond_in_flight(sets, ["gunicorn-sync"], "kill-worker")
    assert events.never_back(sets, ["gunicorn-sync"], "kill-container") == ""
    with pytest.raises(facts.FactError, match="back after"):
        events.never_back(sets, ["nginx-deploy-gevent"], "kill-container")
    with pytest.raises(facts.FactError, match="never back"):
        events.all_back(sets, ["gunicorn-sync"], "kill-container")
    assert events.requests_of(sets, ["gunicorn-sync"], "hog") == [8, 9]
    with pytest.raises(facts.FactError, match="no repeat"):
        events.most(sets, ["gunicorn-sync"], "deploy")
