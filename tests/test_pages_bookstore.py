"""bench/pages/bookstore.py on the committed bookstore sets: the cells, figures and words docs/bookstore.md states,
each from the records as the set's results.md prints them."""

from __future__ import annotations

import pytest

from bench.pages import bookstore, rows, words
from bench.pages.facts import FactError, Facts, require
from bench.pages.render import ROOT

SYNC, GEVENT, GRANIAN = "bookstore-gunicorn-sync", "bookstore-gunicorn-gevent", "bookstore-granian"
PYPY = "bookstore-gunicorn-gevent-pypy"
NOT_AT_0_9 = [
    "bookstore-gunicorn-gevent",
    "bookstore-gunicorn-gevent-2",
    "bookstore-uwsgi-gevent",
    "bookstore-quart-uvicorn",
]


@pytest.fixture(scope="module")
def main() -> Facts:
    return Facts.of(ROOT / "results" / "2026-11-25-bookstore")


@pytest.fixture(scope="module")
def ladder() -> Facts:
    return Facts.of(ROOT / "results" / "2026-11-25-bookstore-ladder")


@pytest.fixture(scope="module")
def prepared() -> Facts:
    return Facts.of(ROOT / "results" / "2026-11-24-bookstore-prepared")


@pytest.fixture(scope="module")
def cpython(main: Facts) -> list[str]:
    return [target for target in bookstore.targets(main) if target != PYPY]


def test_the_set_s_targets_and_sweeps_in_its_order(main: Facts) -> None:
    assert bookstore.targets(main)[:2] == [SYNC, GEVENT] and len(bookstore.targets(main)) == 7
    assert bookstore.clients_of(main, "author") == [8, 32, 128, 512]
    assert bookstore.clients_of(main, "slow") == [4, 16, 64, 256]


def test_a_cell_is_the_row_results_md_prints(main: Facts) -> None:
    # results.md: 323.8 requests/s, 19 % of the database, P99 263 ms; 3.49 + 1.10 ms of CPU
    assert bookstore.cell(main, SYNC, "author", 32) == "324 (0.19), 263 ms"
    assert bookstore.cpu_cell(main, SYNC, "author", 32) == "3.49 + 1.10"
    assert bookstore.cpu_cell(main, SYNC, "slow", 16) == "3.90 + 34.26"
    assert bookstore.value(main, SYNC, "author", "pgbench_tps", 8) == pytest.approx(1767.9)
    assert bookstore.row(main, GRANIAN, "moderate").record.clients == 32
    # a swept load: the row at the clients asked for; without them, the fewest the set measured first
    assert bookstore.row(main, SYNC, "author", 32).record.clients == 32
    assert bookstore.row(main, SYNC, "author").record.clients == 8
    with pytest.raises(FactError):
        bookstore.row(main, GRANIAN, "author", 33)


def test_spreads_over_targets_clients_and_repeats(main: Facts, cpython: list[str]) -> None:
    shares = bookstore.spread(main, "vs_database", "author", cpython, 32)
    assert (round(shares.low, 2), round(shares.high, 2)) == (0.13, 0.24)
    over = bookstore.over_clients(main, GEVENT, "author")
    assert (round(over.low), round(over.high)) == (228, 270)
    at_32 = bookstore.runs(main, GEVENT, "author", "rps", 32)
    assert (round(at_32.low, 1), round(at_32.high, 1)) == (233.3, 255.2)  # results.md: 254.9 (233.3–255.2)
    repeats = bookstore.runs(main, GEVENT, "slow", "vs_database", 16)
    assert (round(repeats.low, 2), round(repeats.high, 2)) == (0.49, 1.13)
    both = bookstore.spread_over(main, ["app_cpu_ms_per_request", "pg_cpu_ms_per_request"], "author", [GRANIAN], 32)
    assert (round(both.low, 2), round(both.high, 2)) == (0.94, 2.80)


def test_the_503s_past_the_pool_and_the_steady_measurements(main: Facts) -> None:
    gevent = [GEVENT, "bookstore-gunicorn-gevent-2", PYPY]
    at_64, at_256 = bookstore.refused(main, gevent, "slow", 64), bookstore.refused(main, gevent, "slow", 256)
    assert (at_64.low, at_64.high, at_256.low, at_256.high) == (4, 31, 141, 212)
    assert bookstore.refused(main, [SYNC], "slow", 256).high == 0
    assert bookstore.steady(main) == (66, 210)
    assert bookstore.most_steady(main, NOT_AT_0_9, "slow", 16) == 1


def test_ordinals_past_ten() -> None:
    said = [words.ordinal(place) for place in (2, 3, 4, 11, 12, 13, 21, 22, 23, 101, 111)]
    assert said == ["2nd", "3rd", "4th", "11th", "12th", "13th", "21st", "22nd", "23rd", "101st", "111th"]


def test_ranks_and_the_lowest(main: Facts, cpython: list[str]) -> None:
    assert bookstore.rank(main, GRANIAN, "moderate", "vs_database", cpython) == 1
    assert bookstore.rank(main, SYNC, "moderate", "vs_database", cpython) == 5
    assert bookstore.ranks_said(main, [SYNC, GRANIAN], "moderate", "vs_database", cpython) == "first and 5th of 6"
    assert bookstore.lowest_at(main, GEVENT, "author", cpython) == (4, 4)
    loads = [("author", 32), ("moderate", 32), ("slow", 16), ("mixed", 32)]
    assert bookstore.slowest_on(main, PYPY, loads) == (4, 4)
    assert bookstore.slowest_on(main, GRANIAN, loads) == (0, 4)
    assert bookstore.by_value(main, [SYNC, GRANIAN], "slow", "vs_database", 16) == [GRANIAN, SYNC]
    assert bookstore.listed(main, [SYNC, GRANIAN], "slow", "vs_database", 16) == (
        "bookstore-granian 0.97 and bookstore-gunicorn-sync 0.96"
    )


def test_the_slow_page_goal_and_the_postgres_cpu_goal(main: Facts, cpython: list[str]) -> None:
    assert bookstore.at_least(main, cpython, "slow", "vs_database", 0.9, 16) == [SYNC, GRANIAN]
    assert round(bookstore.app_share_high(main, NOT_AT_0_9, "slow", 16), 2) == 0.11
    assert round(bookstore.pg_over_alone(main, GRANIAN, "author", 32), 2) == 1.19
    assert bookstore.within(main, cpython, "author", 1.3, 32) == [GRANIAN, "bookstore-quart-uvicorn"]
    assert bookstore.by_pg_over_alone(main, [PYPY, SYNC, GRANIAN], "author", 32) == [GRANIAN, SYNC, PYPY]


def test_the_profiles_milliseconds_and_shares(main: Facts, ladder: Facts, cpython: list[str]) -> None:
    # the ladder's profile table: 0.70 (32 %) in SQLAlchemy of 2.20 ms on the top rung
    top = "bookstore-ladder-two-processes"
    assert f"{bookstore.profile_ms(ladder, top, 'SQLAlchemy'):.2f}" == "0.70"
    assert f"{bookstore.profile_total(ladder, top):.2f}" == "2.20"
    shares = bookstore.profile_shares(main, "SQLAlchemy", cpython)
    assert (round(shares.low, 2), round(shares.high, 2)) == (0.52, 0.64)
    with pytest.raises(FactError):
        bookstore.profile_ms(main, PYPY, "SQLAlchemy")  # py-spy does not read PyPy


def test_the_ladder_its_gains_and_the_paced_yardstick(ladder: Facts) -> None:
    rungs = bookstore.ladder(ladder)
    assert [step.record.rung for step in rungs] == list(range(8))
    assert bookstore.ladder_cells(rungs[1]) == ["224", "0.065", "600", "3.93", "–", "0.81", "0.34", "0.57"]
    assert bookstore.ladder_cells(rungs[7])[4] == "0.35"  # pgbouncer's own CPU
    assert [f"x{bookstore.gain(ladder, step):.2f}" for step in (2, 3, 4, 6)] == ["x1.51", "x1.06", "x1.16", "x1.45"]
    paced = bookstore.paced(ladder)
    assert (round(paced[0], 2), round(max(paced[2:]), 2)) == (1.15, 1.17)
    assert bookstore.moved(ladder, GEVENT, "bookstore-ladder-prepared", "author") == "did not change"
    # medians 339 and 358, their runs overlapping: not told apart
    assert (
        bookstore.moved(ladder, "bookstore-ladder-one-statement", "bookstore-ladder-dicts", "author")
        == "did not change"
    )
    assert bookstore.moved(ladder, "bookstore-ladder-gc-freeze", "bookstore-ladder-two-processes", "author") == "raised"
    # x1.51 for one statement against x1.45 for a second process, the next largest
    assert bookstore.largest_gain(ladder) == 2


def test_an_order_a_sentence_names_holds_or_fails_the_page(main: Facts) -> None:
    two_processes = [SYNC, "bookstore-gunicorn-gevent-2", "bookstore-uwsgi-gevent", "bookstore-quart-uvicorn"]
    said = [[GRANIAN], two_processes, [GEVENT]]  # 421.72; 323.75 to 372.85; 254.88 a second at 32 clients
    assert bookstore.in_order(main, said, "author", "rps", 32) == ""
    with pytest.raises(FactError, match="not in the order said"):
        bookstore.in_order(main, [[SYNC], ["bookstore-gunicorn-gevent-2"]], "author", "rps", 32)


def test_groups_close_where_neither_stands_above_the_other(main: Facts) -> None:
    # At 32 clients on the fast read: granian 421.72 above all, gunicorn's threads 323.75 below three gevent ways.
    assert bookstore.interleaved(main, [GRANIAN, SYNC], NOT_AT_0_9, "author", "rps", 32)
    assert not bookstore.interleaved(main, [GRANIAN], NOT_AT_0_9, "author", "rps", 32)
    assert not bookstore.interleaved(main, [GEVENT], [GRANIAN, SYNC], "author", "rps", 32)


def test_as_much_as_the_rest_from_each_pair_s_runs(main: Facts) -> None:
    # The slow page at 16 clients: gunicorn's threads' runs 0.51 to 1.11 of Postgres alone overlap every way's.
    assert bookstore.as_much(main, [GRANIAN, SYNC], NOT_AT_0_9, "slow", "vs_database", 16) == "within the spread of"
    # The fast read at 32 clients: one gevent process's runs are below granian's.
    assert bookstore.groups_compared(main, [GEVENT], [GRANIAN], "author", "rps", 32) == "behind"
    with pytest.raises(FactError, match="not as much"):
        bookstore.as_much(main, [GEVENT], [GRANIAN], "author", "rps", 32)


def test_the_slow_page_s_503s_p99s_and_the_goal_s_runs(main: Facts) -> None:
    # Quart on uvicorn answered one 503, in one repeat at 256 clients; uWSGI's gevent loop none.
    assert bookstore.refusing_repeats(main, "bookstore-quart-uvicorn", "slow", [64, 256]) == (1, 6)
    assert bookstore.refusing_repeats(main, "bookstore-uwsgi-gevent", "slow", [64, 256]) == (0, 6)
    assert bookstore.under(main, ["bookstore-uwsgi-gevent"], "slow", "p99_ms", 256, 10000) == ""  # 8840 ms
    with pytest.raises(FactError, match="not under"):
        bookstore.under(main, [GEVENT], "slow", "p99_ms", 256, 10000)  # 10260 ms
    assert bookstore.reaching(main, NOT_AT_0_9, "slow", "vs_database", 16, 0.9) == ""  # their best runs 0.92 to 1.13
    with pytest.raises(FactError, match="reaches"):
        bookstore.reaching(main, NOT_AT_0_9, "slow", "vs_database", 16, 1.0)


def test_only_one_rung_beyond_the_paced_bound(ladder: Facts) -> None:
    assert bookstore.only_rung_beyond(ladder, 1, 1.2) == ""  # rung 1 at 1.43, the others 0.99 to 1.17
    with pytest.raises(FactError, match="not only rung"):
        bookstore.only_rung_beyond(ladder, 1, 1.1)


def test_a_premise_a_template_computes_holds_or_fails_the_page() -> None:
    assert require(True, "anything") == ""
    with pytest.raises(FactError, match="not so: PyPy was the slowest"):
        require(False, "PyPy was the slowest")


def test_a_figure_over_every_number_of_clients(main: Facts, cpython: list[str]) -> None:
    every = bookstore.over_every(main, "vs_database", "slow", cpython)
    per_clients = [bookstore.spread(main, "vs_database", "slow", cpython, clients) for clients in (4, 16, 64, 256)]
    assert (every.low, every.high) == (min(s.low for s in per_clients), max(s.high for s in per_clients))


def test_a_change_within_the_probe_s_move_or_the_page_fails(prepared: Facts) -> None:
    commit = f"{GEVENT} READS_END_WITH=commit"
    assert (rows.probe_seconds(prepared).low, rows.probe_seconds(prepared).high) == (0.108, 0.207)
    assert round(bookstore.over(prepared, GEVENT, commit, "author"), 3) == 0.986  # 211.62 to 208.61 a second
    assert bookstore.within_probe(prepared, [(GEVENT, commit)], "author") == ""
    # pgbench prepared over unnamed on the fast read: x1.94 the transactions, beyond the probe's x1.92.
    with pytest.raises(FactError, match="beyond the CPU probe's"):
        bookstore.within_probe(prepared, [(GEVENT, commit)], "author", "pgbench_tps")


def test_words_for_how_much_less_or_more(ladder: Facts) -> None:
    before = bookstore.value(ladder, GEVENT, "author", "pg_cpu_ms_per_request")
    after = bookstore.value(ladder, "bookstore-ladder-prepared", "author", "pg_cpu_ms_per_request")
    # 1.25 to 0.81 ms: a third less, not half
    assert words.cut(before, after) == "a third"
    assert words.halves_or(before, after) == "falls by a third"
    assert round(words.cut_share(before, after), 2) == 0.35
    share0 = bookstore.value(ladder, GEVENT, "author", "vs_database")
    share1 = bookstore.value(ladder, "bookstore-ladder-prepared", "author", "vs_database")
    assert words.halves_or(share0, share1) == "halves"
    assert words.doubles_or(1701.0, 3553.1) == "doubled" and words.doubles_or(1.0, 1.45) == "went x1.45"
    assert [words.fraction_word(share) for share in (0.11, 0.24, 0.35, 0.52)] == [
        "a tenth", "a quarter", "a third", "half"
    ]  # fmt: skip
    assert [words.multiple(ratio) for ratio in (1.94, 2.09, 1.45)] == ["nearly twice", "twice", "1.4 times"]


def test_bounds_and_rounding_for_prose() -> None:
    assert f"{words.up_to(1.147, 0.05):.2f}" == "1.15" and f"{words.up_to(1.17, 0.1):.1f}" == "1.2"
    assert words.rounded(769.2, 10) == 770
    assert f"{words.up_to(1.12, 0.1):.1f}" == "1.2"  # a bound rounds up


def test_the_set_s_own_figures(main: Facts, ladder: Facts, prepared: Facts) -> None:
    assert (bookstore.minutes(main), bookstore.minutes(ladder), bookstore.minutes(prepared)) == (83.5, 16.7, 8.0)
    warm = bookstore.warm_up(main, PYPY)
    assert (warm.warm_up_s, warm.clients) == (20, 8)
    assert words.said_steps(warm.warm_up_cpu_ms_per_request) == "17.8, 14.5, 12.0 then 12.2"


def test_the_prepared_set_names_its_targets_by_how_reads_end(prepared: Facts) -> None:
    committed = "bookstore-gunicorn-gevent READS_END_WITH=commit"
    assert committed in bookstore.targets(prepared)
    assert bookstore.value(prepared, committed, "author", "pgbench_tps") == pytest.approx(2880.1)


def test_the_machine_and_the_data_from_the_set_s_metadata(main: Facts) -> None:
    assert bookstore.machine(main) == "2-core AMD EPYC machine (Debian 12, Linux 6.18, Docker 20.10, Compose v2 2.26.1)"
    assert bookstore.data(main) == "1,000,000 authors and 9,999,991 books"
