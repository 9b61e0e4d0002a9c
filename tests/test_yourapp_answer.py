"""The decision at the top of make yourapp's page, from records as the mode writes them: the way to run and its
command, never a way with errors at a count without saying so, the tail deciding among ways as fast as the fastest,
the request type that dominates the mix's CPU, and how much of each request's CPU py-spy saw. And on the committed
flaskr set: granian, the fastest at 200 clients with 56 requests that did not get their status, is not the answer."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bench.modes.yourapp import render as page
from bench.modes.yourapp.answer import decision, dominant, seen_share
from bench.modes.yourapp.record import YourAppResult
from bench.results.records import Metadata
from bench.results.store import load

FLASKR = Path(__file__).parent.parent / "results" / "2026-11-26-yourapp-flaskr"

WAYS = {
    "granian": {"server": "granian", "mode": "sync", "workers": 1, "threads_per_worker": 200},
    "gunicorn-threads": {"server": "gunicorn", "mode": "sync", "workers": 4, "threads_per_worker": 50},
    "uwsgi-gevent": {"server": "uwsgi", "mode": "gevent", "workers": 2, "gevent_cores": 1000},
}


def way(name: str, clients: int, rps: float, p99: float | None, **fields: Any) -> YourAppResult:
    raw = {"scenario": "yourapp", "target": name, **WAYS[name], "verified": True, "ok": True, "clients": clients,
           "rps": rps, "p99_ms": p99, "errors": 0, "requests": int(rps * 10), "server_command": f"{name} --serve",
           "rss_mb_peak": 100.0, **fields}  # fmt: skip
    return YourAppResult.from_json(raw)


def metadata(costs: dict[str, dict[str, Any]]) -> Metadata:
    facts = {"mode": "yourapp", "command": "make yourapp", "date": "2026-11-28T00:00:00+00:00", "git_commit": "x",
             "cpu_count": 2, "kernel": "", "docker_version": "", "compose_version": "", "packages": {}}  # fmt: skip
    return Metadata.from_json({**facts, "request_costs": costs})


def test_a_faster_way_with_errors_is_not_the_answer_and_the_page_says_why() -> None:
    records = [
        way("granian", 200, 1500.0, 400.0, errors=56, ok=False),
        way("gunicorn-threads", 200, 1100.0, 600.0),
    ]
    said = "\n".join(decision(records))
    assert said.startswith("**Run gunicorn-threads** (4 processes, 50 threads each):\n\n    gunicorn-threads --serve")
    assert "granian answered more at 200 clients (1500/s) but is not the answer there: 56 of its 15000 requests" in said


def test_among_ways_as_fast_as_the_fastest_the_shorter_tail_is_the_answer() -> None:
    records = [way("granian", 200, 1300.0, 1900.0), way("uwsgi-gevent", 200, 1250.0, 200.0)]
    said = "\n".join(decision(records))
    assert said.startswith("**Run uwsgi-gevent** (2 processes, up to 1000 greenlets each)"), said
    assert "as fast (within 10%) but with a longer tail: granian (1300/s, P99 1900 ms)" in said
    # A way more than a tenth slower is not as fast, whatever its tail.
    slower = [way("granian", 200, 1300.0, 1900.0), way("uwsgi-gevent", 200, 1100.0, 200.0)]
    assert "\n".join(decision(slower)).startswith("**Run granian**")


def test_the_answer_is_at_the_most_clients_and_another_count_s_own_is_named() -> None:
    records = [
        way("granian", 10, 900.0, 5.0),
        way("uwsgi-gevent", 10, 700.0, 4.0),
        way("granian", 200, 900.0, 900.0),
        way("uwsgi-gevent", 200, 880.0, 300.0),
    ]
    said = decision(records)
    assert said[0].startswith("**Run uwsgi-gevent**")
    assert "- At 10 clients the answer is granian: 900 requests/s, P99 5 ms." in said


def test_no_way_without_errors_is_no_answer() -> None:
    records = [way("granian", 50, 900.0, 5.0, errors=3), way("gunicorn-threads", 50, 800.0, 9.0, errors=10)]
    said = "\n".join(decision(records))
    assert "**Run" not in said
    assert "No way served every request of the mix at 50 clients with its expected status" in said
    assert "The fewest failures: granian, 3 of its 9000 requests did not get their expected status" in said


def test_the_request_that_dominates_the_cpu_and_what_py_spy_did_not_see() -> None:
    # A password check: a twelfth of the requests, alone 90 ms of CPU, of which py-spy saw 10 ms held by Python.
    login = {"weight": 1, "cpu_ms": 90.0, "wall_ms": 91.0, "waiting_ms": 1.0, "requests": 30, "samples": 60,
             "profile": {"server": 0.5}}  # fmt: skip
    home = {"weight": 11, "cpu_ms": 1.0, "wall_ms": 1.5, "waiting_ms": 0.5, "requests": 2000, "samples": 300,
            "profile": {"server": 0.6}}  # fmt: skip
    facts = metadata({"POST /login": login, "GET /": home})
    gevent_tail = {"POST /login": {"p99_ms": 2000.0}}
    threads_tail = {"POST /login": {"p99_ms": 300.0}}
    records = [
        way("uwsgi-gevent", 50, 100.0, 1800.0, per_type=gevent_tail),
        way("gunicorn-threads", 50, 100.0, 250.0, per_type=threads_tail),
    ]
    said = "\n".join(dominant(records, facts))
    assert "## The request that costs the most: `POST /login`" in said
    assert "It is 8% of the mix's requests and 89% of its CPU: 90 ms each, alone" in said, said
    assert "py-spy saw Python hold the GIL for 11% of it" in said
    assert "Under gevent its P99 is 2000 ms (the median of the gevent ways) against 300 ms in a thread pool" in said
    assert "gevent.get_hub().threadpool.apply" in said
    assert round(seen_share(login) or 0, 3) == round((60 / 200) / (90 * 30 / 1000), 3)
    # Where every request costs about the same, none dominates and the page says nothing of one.
    even = metadata({"POST /login": login | {"cpu_ms": 1.0}, "GET /": home})
    assert dominant(records, even) == []


def test_flaskr_s_committed_page_does_not_answer_with_a_way_that_had_errors() -> None:
    loaded = load(FLASKR)
    records = loaded.records_of(YourAppResult)
    granian = [r for r in records if r.target == "granian" and r.clients == 200]
    assert sum(r.errors or 0 for r in granian) == 56  # the set as committed
    text = (FLASKR / "results.md").read_text()
    answer = text.split("## What to run, from the figures below", 1)[1].split("\n## ", 1)[0]
    assert not answer.strip().startswith("**Run granian**"), answer
    assert "granian answered more at 200 clients" in answer and "did not get their expected status" in answer
    assert "\n".join(page.answer(records, loaded.metadata)).count("56 of them without their expected status") == 1
