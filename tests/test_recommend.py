"""make recommend (bench/modes/recommend/run.py): its matrix, and a small run of it end to end, rendered."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from bench.bench_run.record import BenchResult
from bench.modes.recommend import run as recommend
from bench.modes.recommend.run import WAYS, Matrix, plan
from tests.conftest import read_back_as_written


def test_each_way_runs_at_one_process_and_one_per_core_with_the_same_threads_in_all() -> None:
    planned = [p for p in plan(list(WAYS), 4, Matrix()) if p.placement.name == "every core"]
    settings = {(p.configured.target, p.per_core): p.configured.settings for p in planned}
    assert settings[("gunicorn-gevent", False)] == {} and settings[("gunicorn-gevent", True)] == {"WORKERS": "4"}
    # uWSGI's file runs one process per core on 2 cores: one is asked for.
    assert settings[("uwsgi-gevent", False)] == {"WORKERS": "1"}
    # The tutorial's 200 threads, shared out: 4 x 50 on 4 cores.
    assert settings[("gunicorn-sync", True)] == {"WORKERS": "4", "THREADS": "50"}
    resolved = next(p for p in planned if p.configured.target == "granian-sync" and p.per_core).configured.resolve()
    assert (resolved.workers, resolved.threads_per_worker) == (4, 50)


def test_slow_api_alone_comes_first_under_each_placement_at_every_load_its_ways_get() -> None:
    planned = plan(list(WAYS), 2, Matrix())
    names = [p.placement.name for p in planned]
    assert names.index("one core") > names.index("every core")
    for placement in ("every core", "one core"):
        mine = [p for p in planned if p.placement.name == placement]
        assert mine[0].configured.scenario == "reference-slow-api", placement
        wanted = {(load.n, load.c) for p in mine[1:] for load in p.loads}
        assert {(load.n, load.c) for load in mine[0].loads} == wanted and all(load.cpu == 0 for load in mine[0].loads)


def test_one_core_of_its_own_for_the_app_the_others_on_the_rest() -> None:
    one_core = [p for p in plan(list(WAYS), 8, Matrix()) if p.placement.name == "one core"]
    assert {tuple(sorted(p.placement.roles.cpusets.items())) for p in one_core} == {
        (("client", "0-6"), ("database", "0-6"), ("server", "7"))
    }
    # One process only there, and none of the ways compared at the README's loads alone.
    assert not any(p.per_core for p in one_core)
    assert not {p.configured.target for p in one_core} & {"gunicorn-http2-gevent", "mod-wsgi-subinterpreters"}
    # On one core: neither a second placement nor a process per core.
    assert [p.placement.name for p in plan(list(WAYS), 1, Matrix())] == ["every core"] * (1 + len(WAYS))


def test_the_ways_new_in_2026_run_at_the_readme_s_two_loads() -> None:
    planned = {p.configured.target: p for p in plan(list(WAYS), 2, Matrix()) if p.placement.name == "every core"}
    assert [(load.n, load.c, load.cpu) for load in planned["gunicorn-http2-gevent"].loads] == [
        (2000, 200, 0), (5000, 1000, 0),
    ]  # fmt: skip
    assert len(planned["gunicorn-gevent"].loads) == 5 and (10000, 5000) in {
        (load.n, load.c) for load in planned["gunicorn-gevent"].loads
    }


@pytest.mark.docker
def test_a_small_run_measures_both_placements_each_against_its_own_reference(tmp_path: Path) -> None:
    if (os.cpu_count() or 1) < 2:
        pytest.skip("one core of the app's own needs a second for the load generator and slow_api")
    arguments = ["--ways", "gunicorn-gevent", "--repeat", "1", "--clients", "4", "--cpu-clients", "4",
                 "--one-core-clients", "4", "--delay", "0.2", "--out", str(tmp_path)]  # fmt: skip
    assert recommend.main(arguments) == 0
    records = json.loads((tmp_path / "results.json").read_text())["results"]
    assert all(record["ok"] for record in records), [r["problem"] for r in records if not r["ok"]]
    read_back_as_written(tmp_path, BenchResult)
    by = {(r["placement"], r["label"], r["cpu_units"]): r for r in records}
    assert set(by) == {
        ("every core", "slow_api-alone", 0), ("every core", "gunicorn-gevent", 0), ("every core", "gunicorn-gevent", 3),
        ("every core", "gunicorn-gevent-2-workers", 0), ("every core", "gunicorn-gevent-2-workers", 3),
        ("one core", "slow_api-alone", 0), ("one core", "gunicorn-gevent", 0), ("one core", "gunicorn-gevent", 3),
    }  # fmt: skip
    two = by[("every core", "gunicorn-gevent-2-workers", 0)]
    assert two["workers"] == 2 and two["per_core"] and not by[("every core", "gunicorn-gevent", 0)]["per_core"]
    assert by[("one core", "gunicorn-gevent", 0)]["cpusets"] == {"server": "1", "client": "0", "database": "0"}
    # Each record a share of slow_api alone under its own placement, not the other's.
    for (placement, _, _), record in by.items():
        assert record["reference_rps"] == by[(placement, "slow_api-alone", 0)]["rps"], record
    page = (tmp_path / "results.md").read_text()
    for heading in ("## One process per core against one", "## One core of its own", "## Bounds on more cores"):
        assert heading in page
    assert "gunicorn-gevent-2-workers: " in page and (tmp_path / "index.html").exists()
