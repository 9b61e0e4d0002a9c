"""docs/reliability.md's and docs/hosts.md's facts (bench/pages/asserted.py): the bounds and settings the end-to-end
tests hold the servers to, read from the tests' source without importing them, checked here against the tests as
Python imports them (and, where the bound is a comparison inside a test, against the test's own function); make
doctor's lines of the committed sets, docs/tests.md and the compose files."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from bench.containers import doctor
from bench.pages import asserted
from bench.pages.facts import FactError
from bench.pages.render import ROOT, render
from tests import hostile_framing, hostile_input, test_faults, test_hosts, test_overload

FAULTS, OVERLOAD, SCENARIOS, HOSTS = (
    "tests/test_faults.py", "tests/test_overload.py", "tests/test_scenarios.py", "tests/test_hosts.py",
)  # fmt: skip
OVERLOADED = "test_clients_far_beyond_capacity_queue_and_the_server_survives"
QUEUED = "queued_in_rounds"  # its check of the 3000 clients, made again where the other parts had the CPU
STOP = "assert_a_stop_lets_requests_finish"


def test_a_test_s_constants_are_those_python_imports() -> None:
    assert asserted.constant(FAULTS, "DELAY") == test_faults.DELAY == 1.0
    assert asserted.constant(FAULTS, "LONGEST_ANSWER") == test_faults.LONGEST_ANSWER == 12  # 3 + DELAY + 5 + 3
    assert asserted.constant(FAULTS, "RECOVERY") == test_faults.RECOVERY == 10
    assert (asserted.constant(OVERLOAD, "CLIENTS"), asserted.constant(OVERLOAD, "DELAY")) == (
        test_overload.CLIENTS,
        test_overload.DELAY,
    )
    assert asserted.constant("tests/hostile_input.py", "EXAMPLES") == hostile_input.EXAMPLES == 300
    assert asserted.constant("tests/hostile_input.py", "UWSGI_HEAD_LIMIT") == hostile_input.UWSGI_HEAD_LIMIT
    names = ("THREADS_WITHIN", "RSS_WITHIN", "CPU_FACTOR", "CPU_TICKS_APART")  # assigned together, as a tuple
    assert [asserted.constant(HOSTS, name) for name in names] == [getattr(test_hosts, name) for name in names]
    assert list(asserted.constant(HOSTS, "SMALL_RUN")) == test_hosts.SMALL_RUN
    with pytest.raises(FactError):
        asserted.constant(FAULTS, "BackgroundLoad")  # imported, not a constant


def test_the_app_s_timeouts_are_its_defaults_without_the_environment() -> None:
    # TIMEOUT_MARGIN = float(os.environ.get("SLOW_API_TIMEOUT_MARGIN", "5")): what it is unless told otherwise
    assert asserted.constant("flask_app/app.py", "TIMEOUT_MARGIN") == 5.0
    assert asserted.constant("flask_app/app.py", "CONNECT_TIMEOUT") == 3.0
    assert asserted.constant("flask_app/gunicorn.conf.py", "backlog") == 4096


def test_an_expression_beyond_constants_and_arithmetic_is_not_evaluated() -> None:
    assert asserted.evaluate(ast.parse("2 * (A - 1) / 4", mode="eval").body, {"A": 3}) == 1.0
    for source in ("A + 1", "len(x)", "x.y", "[*x]"):
        with pytest.raises(asserted.Unevaluable):
            asserted.evaluate(ast.parse(source, mode="eval").body, {})


def test_a_name_a_test_function_assigns_a_parameter_s_default_and_its_cases() -> None:
    assert (asserted.local(SCENARIOS, STOP, "delay"), asserted.local(SCENARIOS, STOP, "clients")) == (2.0, 10)
    assert asserted.default(OVERLOAD, "a_round_in_about_one_delay", "round_delay") == 3.0
    assert asserted.parametrized(OVERLOAD, OVERLOADED) == [("sync-gunicorn", 200), ("async-gevent-gunicorn", 1000)]
    assert asserted.parametrized(FAULTS, "test_slow_api_dies_under_load_and_the_app_recovers") == [
        "async-gevent-gunicorn",
        "sync-gunicorn",
    ]
    # from the test's constants and its case: 3000 clients in rounds of 200
    assert asserted.local(OVERLOAD, QUEUED, "rounds", holds_at_once=200) == 15
    with pytest.raises(FactError):
        asserted.local(SCENARIOS, STOP, "answers")  # assigned, but not from constants
    with pytest.raises(FactError):
        asserted.function(OVERLOAD, "a_round")  # a function is named whole
    slow_api_dies = "slow_api_dies_and_the_app_recovers"
    assert asserted.keyword(FAULTS, slow_api_dies, "BackgroundLoad", "clients") == 100
    assert asserted.keyword(OVERLOAD, "a_round_in_about_one_delay", "load", "requests_total") == 200
    with pytest.raises(FactError):
        asserted.keyword(OVERLOAD, "a_round_in_about_one_delay", "load", "clients")  # not an argument it passes
    with pytest.raises(FactError):
        asserted.default(OVERLOAD, "a_round_in_about_one_delay", "url")  # no default
    with pytest.raises(FactError):
        asserted.parametrized(OVERLOAD, "a_round_in_about_one_delay")


def test_the_bound_a_test_asserts_on_what_it_measured() -> None:
    # in rounds of what the server holds at once: 3000 clients are 15 rounds of the threads', 3 of gevent's
    assert asserted.bound(OVERLOAD, QUEUED, "result.percentiles_ms[100]", holds_at_once=200) == 50_000
    assert asserted.bound(OVERLOAD, QUEUED, "result.percentiles_ms[100]", holds_at_once=1000) == 14_000
    assert asserted.bound(SCENARIOS, STOP, "stopped_in") == 1.0  # delay / 2
    with pytest.raises(FactError):
        asserted.bound(OVERLOAD, QUEUED, "elapsed")  # not a side of any assert of that function
    with pytest.raises(FactError):
        asserted.bound(OVERLOAD, QUEUED, "result.percentiles_ms[100]")  # its holds_at_once not given


def test_the_round_s_bound_is_the_one_the_test_s_own_function_holds(monkeypatch: pytest.MonkeyPatch) -> None:
    """The page's "in less than 5 s", against a_round_in_about_one_delay itself: just under it passes, at it fails."""
    round_delay = asserted.default(OVERLOAD, "a_round_in_about_one_delay", "round_delay")
    limit = asserted.bound(OVERLOAD, "a_round_in_about_one_delay", "elapsed", round_delay=round_delay)
    assert limit == 5.0

    class Answer:
        status = 200

    for elapsed, holds in ((limit - 0.01, True), (limit, False)):
        monkeypatch.setattr(test_overload, "load", lambda *args, elapsed=elapsed, **kwargs: (elapsed, [Answer()]))
        if holds:
            assert test_overload.a_round_in_about_one_delay("http://x") == elapsed
        else:
            with pytest.raises(AssertionError):
                test_overload.a_round_in_about_one_delay("http://x")


def test_the_framing_cases_counted_as_written() -> None:
    assert asserted.count("tests/hostile_framing.py", "CASES") == len(hostile_framing.CASES) == 74
    with pytest.raises(FactError):
        asserted.count("tests/hostile_framing.py", "VALID")  # a string, not a list of cases


def test_a_compose_default_is_the_same_in_every_file_or_an_error(tmp_path: Path) -> None:
    bonus = ["bonus-psycopg2-gevent.yml", "bonus-psycopg3-gevent.yml"]
    assert asserted.compose_default(bonus, "POSTGRES_POOL_MAX") == "30"
    assert asserted.compose_default(["bookstore.yml"], "POSTGRES_STATEMENT_TIMEOUT") == "30"
    (tmp_path / "a.yml").write_text("X: ${POOL:-30}\n")
    (tmp_path / "b.yml").write_text("X: ${POOL:-8}\n")
    (tmp_path / "c.yml").write_text("X: 8\n")
    assert asserted.compose_default(["a.yml"], "POOL", tmp_path) == "30"
    for files in (["a.yml", "b.yml"], ["a.yml", "c.yml"]):
        with pytest.raises(FactError):
            asserted.compose_default(files, "POOL", tmp_path)


def test_how_the_pages_print_a_bound_or_a_setting() -> None:
    assert [asserted.number(value) for value in (12.0, 0.3, 2.5, 4096)] == ["12", "0.3", "2.5", "4096"]
    assert asserted.percent(0.15) == "15 %"
    assert asserted.kilobytes(hostile_input.UWSGI_HEAD_LIMIT) == "60"  # 61439 bytes
    assert asserted.ticks(0.02) == "2"
    assert asserted.options(tuple(test_hosts.SMALL_RUN), "--scenarios") == "-n 10 -c 5 --delay 0.3 --cpu 10"
    with pytest.raises(FactError):
        asserted.options(("-n", "10"), "--scenarios")


def test_make_doctor_s_lines_from_the_committed_sets_and_the_tests_page() -> None:
    line = asserted.make_bench_takes()
    assert line == doctor.make_bench_duration_line(doctor.committed_sets(ROOT))
    assert line == "83.5 min for 22 scenarios (REPEAT=3 ALSO=1000), results/2026-11-25-repeat3 (2026-11-25, 2 cores)"
    assert asserted.make_test_takes() == "about 25 to 65 minutes once the base images are there (docs/tests.md)"
    assert asserted.ports().split(", ") == [str(port) for port in doctor.PORTS]


def test_the_pages_state_no_figure_of_a_run_by_hand() -> None:
    pages = render()
    reliability, hosts = (" ".join(pages[page].split()) for page in ("docs/reliability.md", "docs/hosts.md"))
    assert "figures: unchecked" not in reliability + hosts
    assert "at most 10 s after slow_api was started" in reliability
    assert "the longest at most 50 s for the threads, 14 s" in reliability
    assert "memory within 15 %, CPU per request within a factor of 4" in hosts
