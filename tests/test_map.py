"""`make map` end to end on a tiny grid, and the arithmetic that names each cell's winner."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.bench_run.record import BenchResult
from bench.containers.scenarios import ConfiguredTarget
from bench.modes.map import render as map_renderer
from bench.modes.map import run as workload_map
from tests.conftest import read_back_as_written


def test_winner_lead_and_the_rigged_pair() -> None:
    def record(label: str, delay: float, cpu: int, c: int, rps: float, ok: bool = True) -> BenchResult:
        target = {"scenario": "sync-gunicorn", "target": label, "server": "gunicorn", "mode": "sync", "workers": 1}
        load = {"n": 10 * c, "client": "host", "ceiling_rps": 1000.0, "ceiling_naive_rps": 1000.0}
        measured = {"label": label, "delay": delay, "cpu_units": cpu, "c": c, "rps": rps, "verified": True, "ok": ok}
        return BenchResult.from_json(target | load | measured)

    records = [
        record("threads", 0.5, 0, 500, 200.0),
        record("gevent", 0.5, 0, 500, 600.0),
        record("threads", 0.02, 10, 10, 150.0),
        record("gevent", 0.02, 10, 10, 90.0),
        record("broken", 0.02, 10, 10, 999.0, ok=False),  # a failed cell never wins
    ]
    summary = map_renderer.winners(records)
    assert summary[(0.5, 0, 500)]["winner"] == "gevent"
    assert summary[(0.5, 0, 500)]["lead"] == 3.0
    assert summary[(0.02, 10, 10)]["winner"] == "threads"
    assert summary[(0.02, 10, 10)]["ranking"][-1] == ("broken", 0.0)
    assert map_renderer.rigged(summary) == ((0.5, 0, 500), (0.02, 10, 10))


def test_requests_per_cell_cover_every_client_and_stay_bounded() -> None:
    target = ConfiguredTarget("async-gevent-gunicorn", "gunicorn-gevent").resolve()
    # 10 clients, each request 0.5 s of I/O and 10 ms of CPU: 10 / 0.51 requests/s at best, for 4 s...
    assert workload_map.requests_for(target, 0.5, 10, 10, cores=2) == round(10 / 0.51 * 4)
    # ...but every one of 500 clients sends at least one, and a fast cell stops at MAX_REQUESTS.
    assert workload_map.requests_for(target, 0.5, 10, 500, cores=2) == 500
    assert workload_map.requests_for(target, 0.02, 0, 500, cores=2) == workload_map.MAX_REQUESTS


def test_labels_name_the_settings() -> None:
    assert ConfiguredTarget("async-gevent-gunicorn", "gunicorn-gevent", {"WORKERS": "2"}).label == (
        "gunicorn-gevent-2-workers"
    )
    two = ConfiguredTarget("async-gevent-gunicorn", "gunicorn-gevent", {"WORKERS": "2"}).resolve()
    assert (two.workers, two.concurrency) == (2, 2000)


@pytest.mark.docker
def test_tiny_map_end_to_end(tmp_path: Path) -> None:
    """Two cells of one gevent worker: verified, measured, ranked and drawn; its CPU work bounds its throughput."""
    out = tmp_path / "map"
    arguments = ["--targets", "gunicorn-gevent", "--delays", "0.05", "--cpus", "0 40", "--clients", "5"]
    assert workload_map.main([*arguments, "--out", str(out)]) == 0
    document = json.loads((out / "results.json").read_text())
    assert document["metadata"]["mode"] == "map"
    read_back_as_written(out, BenchResult)
    assert document["metadata"]["cpus"] == [0, 40]
    records = {record["cpu_units"]: record for record in document["results"]}
    assert set(records) == {0, 40}
    for record in records.values():
        assert record["ok"] and record["verified"], record
        assert (record["label"], record["delay"], record["c"]) == ("gunicorn-gevent", 0.05, 5)
        assert record["n"] >= 5 and record["rps"] > 0 and 0 < record["efficiency"] <= 1.2
    heavy = records[40]
    assert records[0]["cpu_ms_per_unit"] is None and heavy["cpu_ms_per_unit"] > 0
    # One process does the work on one core: never more than 1 / (CPU seconds per request), whatever the machine.
    cpu_seconds = 40 * heavy["cpu_ms_per_unit"] / 1000
    assert heavy["rps"] <= 1.15 / cpu_seconds, heavy
    assert heavy["ceiling_rps"] <= 1 / cpu_seconds + 0.01
    assert heavy["rps"] < records[0]["rps"]
    for drawn in ("results.md", "map_winners.png", "map_throughput.png"):
        assert (out / drawn).stat().st_size > 0
    assert "## Winner per cell" in (out / "results.md").read_text()
