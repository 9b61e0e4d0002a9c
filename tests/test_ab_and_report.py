"""ab's report as ab really prints it, the ceiling arithmetic, and the rendering of results.

The files in ab_outputs/ are real ab 2.3 outputs captured here: clean.txt is `ab -n 40 -c 10` against
slow_api at delay 0.2; non2xx.txt, length.txt and close.txt are `ab -n 40 -c 4` against a small
http.server that answers every fourth request with 500, varies its body length, or closes every fourth
connection unanswered; aborted.txt is `ab -n 200 -c 10` whose server was killed mid-run. reset.txt is
`ab -r -n 40 -c 4` against an http.server that resets every fourth connection (SO_LINGER 0, then close),
reset_without_r.txt the same without -r.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from bench.bench_run.record import BenchResult
from bench.bench_run.render import COLUMNS, row, summarise
from bench.loadgen.ab import parse_ab
from bench.models.ceiling import ceiling_rps, efficiency, naive_ceiling_rps
from bench.models.spread import Spread
from bench.sets import render

OUTPUTS = Path(__file__).parent / "ab_outputs"
RESULTS = Path(__file__).parent.parent / "results"


def parsed(name: str):
    return parse_ab((OUTPUTS / f"{name}.txt").read_text())


def test_clean_run() -> None:
    result = parsed("clean")
    assert (result.complete, result.failed, result.non2xx) == (40, 0, 0)
    assert result.rps == 39.38 and result.seconds == 1.016
    assert result.p99_ms == 204 and 200 <= result.p50_ms <= result.p99_ms


def test_non_2xx_answers_are_not_failed_requests() -> None:
    result = parsed("non2xx")
    assert (result.complete, result.failed, result.non2xx) == (40, 0, 10)


def test_length_failures() -> None:
    result = parsed("length")
    assert (result.failed, result.failed_length, result.failed_receive, result.non2xx) == (27, 27, 0, 0)


def test_connections_closed_unanswered_count_as_failed() -> None:
    result = parsed("close")
    assert result.failed == 10 and result.failed == sum(
        (result.failed_connect, result.failed_receive, result.failed_length, result.failed_exceptions)
    )


def test_reset_connections_count_as_failed_with_r() -> None:
    # 10 resets of 40: ab counts each as a receive error, a wrong length and a poll exception.
    result = parsed("reset")
    assert (result.complete, result.failed, result.non2xx) == (40, 30, 0)
    breakdown = (result.failed_connect, result.failed_receive, result.failed_length, result.failed_exceptions)
    assert breakdown == (0, 10, 10, 10)


def test_aborted_run_is_an_error_that_says_why() -> None:
    with pytest.raises(
        ValueError, match=r"apr_socket_recv: Connection refused \(111\); Total of 42 requests completed"
    ):
        parsed("aborted")
    with pytest.raises(ValueError, match=r"apr_socket_recv: Connection reset by peer \(104\)"):
        parsed("reset_without_r")


def test_ceiling_counts_abs_solo_first_request() -> None:
    assert ceiling_rps(2000, 200, 1, None) == pytest.approx(181.82, abs=0.01)  # 2000 / (1 + 10)
    assert 10 / ceiling_rps(10, 5, 1, None) == pytest.approx(3.0)  # the tutorial's bonus: 3 s, not 2
    assert ceiling_rps(10, 5, 1, 1) == pytest.approx(1.0)  # one request at a time
    assert ceiling_rps(2000, 200, 1, 100) == pytest.approx(2000 / 21)  # the server, not ab, is the limit
    assert ceiling_rps(2000, 200, 0.5, None) == pytest.approx(2 * 181.82, abs=0.02)
    assert naive_ceiling_rps(200, 1, None) == 200 and naive_ceiling_rps(200, 1, 50) == 50
    assert math.isinf(ceiling_rps(10, 5, 0, None))
    assert efficiency(163.6, 181.8) == pytest.approx(0.9, abs=0.001)


def record(target: str, ok: bool, **extra: object) -> dict:
    return {
        "scenario": "sync-gunicorn", "target": target, "server": "gunicorn", "mode": "sync", "workers": 4,
        "threads_per_worker": 50, "gevent_cores": None, "concurrency": 200, "n": 2000, "c": 200, "delay": 1.0,
        "client": "host", "ceiling_rps": 181.82, "ceiling_naive_rps": 200.0, "verified": True, "ok": ok,
        "problem": None if ok else "3 failed, 0 non-2xx of 2000", "rps": 123.45, "efficiency": 0.679,
        "p50_ms": 1010, "p99_ms": 2100, "failed": 0 if ok else 3, "non2xx": 0, "threads_idle": 8,
        "threads_peak": 205, "rss_mb_peak": 120.5, "cpu_seconds": 9.3, "pg_sessions_peak": None, **extra,
    }  # fmt: skip


METADATA = {
    "date": "2026-11-22T20:00:00+00:00", "git_commit": "abc1234", "cpu_count": 2, "kernel": "6.1",
    "docker_version": "20.10.24", "compose_version": "1.29.2", "command": "python -m bench.modes.bench",
    "mode": "bench",
    "packages": {"flask-playground/gunicorn": ["Flask==3.1.3"]},
}  # fmt: skip


def test_report_shows_failures_as_failed_never_as_a_number(tmp_path: Path) -> None:
    records = [record("good", True), record("bad", False, rps=999.9, problem="unexpected body 'a | b'")]
    (tmp_path / "results.json").write_text(json.dumps({"metadata": METADATA, "results": records}))
    render(tmp_path)
    markdown = (tmp_path / "results.md").read_text()
    assert "python -m bench.modes.bench" in markdown and "Not OK: bad" in markdown
    good_row, bad_row = (line for line in markdown.splitlines() if line.startswith("| sync-gunicorn"))
    assert "123.5" in good_row and "68%" in good_row
    assert "**FAILED**: unexpected body 'a \\| b'" in bad_row and "999.9" not in bad_row
    assert bad_row.replace("\\|", "").count("|") == good_row.count("|")
    for chart in ("throughput.png", "latency.png"):
        assert (tmp_path / chart).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_target_that_did_not_start_beside_a_probed_one_renders(tmp_path: Path) -> None:
    """A run whose first target was measured (its CPU probed) and whose next did not start: both pages render, the
    unstarted row says why, with a dash for what was never measured, in as many cells as the header."""
    probed = record("good", True, steady=True, cpu_probe_moved={"server": 1.02}, repeat=0)
    unstarted = {key: value for key, value in record("down", False).items() if key in NOT_MEASURED_KEYS}
    unstarted["problem"] = "did not start: docker compose up failed: Bind for 127.0.0.1:3000 failed: port is taken"
    (tmp_path / "results.json").write_text(json.dumps({"metadata": METADATA, "results": [probed, unstarted]}))
    render(tmp_path)
    markdown = (tmp_path / "results.md").read_text()
    header = next(line for line in markdown.splitlines() if line.startswith("| scenario"))
    good_row, down_row = (line for line in markdown.splitlines() if line.startswith("| sync-gunicorn"))
    assert "CPU steady" in header and good_row.count("|") == down_row.count("|") == header.count("|")
    assert "port is taken" in markdown and down_row.rstrip(" |").endswith("–")
    page = (tmp_path / "index.html").read_text()
    assert page.count("<tr") == 3  # the header and both targets


# What a record of a target that did not start carries (bench/bench_run/measure.py): what it is, not what it did.
NOT_MEASURED_KEYS = {
    "scenario", "target", "server", "mode", "workers", "threads_per_worker", "gevent_cores", "concurrency", "n",
    "c", "delay", "client", "ceiling_rps", "ceiling_naive_rps", "verified", "ok", "problem",
}  # fmt: skip


def test_sweep_report(tmp_path: Path) -> None:
    records = [record("gunicorn-sync", True, c=c, n=5 * c, rps=min(c, 200) * 0.9) for c in (10, 50, 200, 500)]
    records.append(record("gunicorn-sync", False, c=1000, n=5000, rps=999.9))  # drawn as a red cross, not a point
    metadata = METADATA | {"mode": "sweep"}
    (tmp_path / "results.json").write_text(json.dumps({"metadata": metadata, "results": records}))
    render(tmp_path)
    assert (tmp_path / "sweep.png").read_bytes()[:4] == b"\x89PNG"
    assert "sweep.png" in (tmp_path / "results.md").read_text()


def test_overload_report_names_the_first_failing_concurrency(tmp_path: Path) -> None:
    records = [record("gunicorn-sync", True, c=c, n=c) for c in (1000, 2000)]
    records.append(record("gunicorn-sync", False, c=5000, n=5000, problem="ab aborted: timeout", survived=True))
    gevent = {"mode": "gevent", "workers": 1, "threads_per_worker": None, "gevent_cores": 1000}
    records += [record("gunicorn-gevent", True, c=c, n=c, **gevent) for c in (1000, 2000, 5000)]
    metadata = METADATA | {"mode": "overload"}
    (tmp_path / "results.json").write_text(json.dumps({"metadata": metadata, "results": records}))
    render(tmp_path)
    markdown = (tmp_path / "results.md").read_text()
    assert "Not OK" not in markdown  # failing is what an overload run looks for
    assert "| gunicorn-sync | 4 x 50 threads | 2000 | 5000 | ab aborted: timeout | yes |" in markdown
    assert "| gunicorn-gevent | 1 x 1000 greenlets | 5000 | none up to 5000 | – | – |" in markdown


def test_report_gives_cpu_per_request_for_each_process_on_the_path(tmp_path: Path) -> None:
    spent = {"slow_api": 0.4, "docker-proxy": 0.8, "ab": 0.2}
    records = [record("gunicorn-sync", True, cpu_seconds=3.0, cpu_seconds_others=spent, machine_busy=0.25)]
    (tmp_path / "results.json").write_text(json.dumps({"metadata": METADATA, "results": records}))
    render(tmp_path)
    (row,) = (line for line in (tmp_path / "results.md").read_text().splitlines() if line.startswith("| sync-"))
    # 2000 requests: 3 s of the app's CPU is 1.5 ms each.
    assert "| 1.50 | api 0.20, proxy 0.40, ab 0.10 | 25% |" in row


def test_repeats_give_the_median_with_its_spread_and_mark_overlaps() -> None:
    runs = [
        record("a", True, rps=rps, repeat=repeat, vs_reference=share)
        for repeat, (rps, share) in enumerate([(100.0, 0.60), (120.0, 0.70), (110.0, 0.65)])
    ]
    runs += [record("b", True, rps=rps, repeat=repeat) for repeat, rps in enumerate([115.0, 130.0, 140.0])]
    runs += [record("c", True, rps=rps, repeat=repeat) for repeat, rps in enumerate([150.0, 151.0, 152.0])]
    runs += [record("d", ok, rps=150.0, repeat=repeat) for repeat, ok in enumerate([True, False, True])]
    a, b, c, d = summarise([BenchResult.from_json(run) for run in runs])
    assert (a.runs, a.spread) == (3, Spread(median=110.0, low=100.0, high=120.0))
    assert a.record.repeat == 2 and a.vs_reference == 0.65  # the median run's own figures, the median share
    assert a.efficiency == round(110.0 / 181.82, 3)
    # a (100-120) and b (115-140) overlap: this run does not tell them apart; c (150-152) stands clear.
    assert a.within_spread_of == ["b"] and b.within_spread_of == ["a"] and c.within_spread_of == []
    # One failed run fails the row: a reader must not see a median that hides it.
    assert not d.ok and d.within_spread_of is None and d.spread is None
    assert row(a)[COLUMNS.index("requests/s")] == "110.0 (100.0–120.0)"
    assert row(a)[COLUMNS.index("within spread of")] == "b" and row(c)[COLUMNS.index("within spread of")] == "none"


def test_a_probed_set_says_how_steady_the_cpu_was_and_where_the_roles_ran(tmp_path: Path) -> None:
    """make bench probes the CPU around each run: the table says per row how many runs kept its speed, the verdict
    counts the ones that did not, and the page says where server, client and database ran."""

    def probed(target: str, repeat: int, moved: float) -> dict:
        factors = {"server": moved, "client": 1.0, "database": 1.0}
        return record(target, True, repeat=repeat, cpu_probe_moved=factors, steady=moved <= 1.25)

    runs = [probed("a", 0, 1.1), probed("a", 1, 1.31), probed("a", 2, 1.0), probed("b", 0, 1.02)]
    facts = {"engine": "local", "engine_name": "vm", "cores": 2, "cpu_model": "AMD EPYC"}
    roles = {"server": facts | {"cpuset": "1"}, "client": facts | {"cpuset": "0"}, "database": facts}
    metadata = METADATA | {"repeat": 3, "roles": roles | {"one_machine": True, "shared_machine": True}}
    (tmp_path / "results.json").write_text(json.dumps({"metadata": metadata, "results": runs}))
    render(tmp_path)
    markdown = (tmp_path / "results.md").read_text()
    header = next(line for line in markdown.splitlines() if line.startswith("| scenario"))
    assert header.endswith("| CPU steady |")
    cells = {
        line.split(" | ")[1]: line.split(" | ")[-1] for line in markdown.splitlines() if "| sync-gunicorn |" in line
    }
    assert cells == {"a": "2 of 3 (x1.31) |", "b": "yes |"}
    assert "1 of 4 measurements ran while the CPU changed speed" in markdown
    assert "Roles: server on vm (cores 1), client on vm (cores 0), database on vm; all on one machine" in markdown
    # A set from before the probe keeps the table it had.
    (tmp_path / "results.json").write_text(json.dumps({"metadata": METADATA, "results": [record("a", True)]}))
    render(tmp_path)
    assert "CPU steady" not in (tmp_path / "results.md").read_text()


@pytest.mark.parametrize("result_set", sorted(path.parent.name for path in RESULTS.glob("*/results.json")))
def test_every_committed_set_renders_to_what_is_committed(tmp_path: Path, result_set: str) -> None:
    """The pages of a committed set are what its results.json renders to today: the renderer may change, the
    numbers a reader sees may not (charts are drawn too, and compared by what the page shows of them)."""
    folder = tmp_path / result_set  # the page names its set by its folder
    folder.mkdir()
    (folder / "results.json").write_text((RESULTS / result_set / "results.json").read_text())
    render(folder)
    for name in ("results.md", "index.html"):
        assert (folder / name).read_text() == (RESULTS / result_set / name).read_text(), name
