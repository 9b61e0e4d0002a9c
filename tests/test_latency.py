"""`make latency`: an open-loop run end to end, its report rendered from JSON alone, and its record typed from where
it is measured to where it is read back, written byte for byte as before it was typed."""

from __future__ import annotations

import json
import re
import shutil
from dataclasses import fields, replace
from pathlib import Path
from types import SimpleNamespace

import pytest

from bench.loadgen import vegeta
from bench.modes.latency import run as latency
from bench.modes.latency.record import LatencyResult
from bench.results import store
from bench.sets import render
from tests.fake_runs import FakeStart, result_set_with

RECORD_KEYS = {
    "scenario", "target", "server", "mode", "workers", "threads_per_worker", "gevent_cores", "concurrency", "delay",
    "loadgen", "keepalive", "client", "verified", "problem", "ok", "base_rps", "base_command", "fraction",
    "offered_rps", "sent_rps", "achieved_rps", "requests", "success_ratio", "keeps_up", "status_codes",
    "failure_kinds", "p50_ms", "p90_ms", "p99_ms", "p999_ms", "max_ms", "send_lag_ms_max", "command",
}  # fmt: skip


@pytest.mark.docker
def test_an_open_loop_run_keeps_its_rate(tmp_path: Path) -> None:
    """vegeta from the host where it is installed, else from its container (bench/loadgen/Dockerfile-vegeta)."""
    arguments = ["--scenarios", "sync-gunicorn", "--fractions", "0.25", "--duration", "5", "--delay", "0.5"]
    assert latency.main([*arguments, "--out", str(tmp_path)]) == 0
    document = json.loads((tmp_path / "results.json").read_text())
    assert document["metadata"]["mode"] == "latency"
    assert document["metadata"]["command"].startswith("python -m bench.modes.latency --scenarios sync-gunicorn")
    (record,) = document["results"]
    assert record.keys() >= RECORD_KEYS, RECORD_KEYS - record.keys()
    assert record["client"] == ("host" if shutil.which("vegeta") else "container"), record
    assert record["ok"] and record["keeps_up"] and record["success_ratio"] == 1, record
    # The base: 200 threads at 0.5 s each allow 400 answers per second at most.
    assert 200 <= record["base_rps"] <= 404 and record["fraction"] == 0.25, record
    assert record["offered_rps"] == round(0.25 * record["base_rps"]), record
    assert record["requests"] == pytest.approx(5 * record["offered_rps"], rel=0.02), record
    assert record["sent_rps"] == pytest.approx(record["offered_rps"], rel=0.02), record
    assert record["achieved_rps"] == pytest.approx(record["offered_rps"], rel=0.03), record
    assert record["status_codes"] == {"200": record["requests"]} and record["failure_kinds"] == {}, record
    # Every request waited the delay, and a quarter of the base leaves nothing to queue behind.
    assert 500 <= record["p50_ms"] <= record["p90_ms"] <= record["p99_ms"] <= record["p999_ms"] < 1000, record
    markdown = (tmp_path / "results.md").read_text()
    assert "| sync-gunicorn | gunicorn-sync | gunicorn | 4 x 50 threads |" in markdown
    assert (tmp_path / "latency.png").read_bytes()[:4] == b"\x89PNG"


METADATA = {
    "date": "2026-11-23T20:00:00+00:00", "git_commit": "abc1234", "cpu_count": 2, "kernel": "6.1",
    "docker_version": "20.10.24", "compose_version": "2.40.3", "command": "python -m bench.modes.latency",
    "mode": "latency", "packages": {},
}  # fmt: skip


def point(fraction: float, **measured: object) -> dict:
    base = {
        "scenario": "sync-gunicorn", "target": "gunicorn-sync", "server": "gunicorn", "mode": "sync", "workers": 4,
        "threads_per_worker": 50, "gevent_cores": None, "concurrency": 200, "delay": 1.0, "verified": True,
        "loadgen": "vegeta", "client": "host",
        "problem": None, "ok": True, "base_rps": 190.0, "fraction": fraction, "offered_rps": round(190 * fraction),
        "requests": round(1900 * fraction), "sent_rps": round(190 * fraction), "success_ratio": 1.0,
        "keeps_up": True, "status_codes": {"200": 10}, "failure_kinds": {}, "p50_ms": 1010.0, "p90_ms": 1020.0,
        "p99_ms": 1050.0, "p999_ms": 1100.0, "max_ms": 1100.0, "achieved_rps": round(190 * fraction),
    }  # fmt: skip
    return base | measured


def test_latency_report_shows_who_cannot_keep_up(tmp_path: Path) -> None:
    records = [point(0.5), point(1.0), point(1.1, achieved_rps=150.2, keeps_up=False, p99_ms=4200.0, p999_ms=4800.0)]
    records.append(
        point(1.2, achieved_rps=90.0, keeps_up=False, success_ratio=0.9, p99_ms=None, p999_ms=None,
              failure_kinds={"timeout": 228}, status_codes={"0": 228, "200": 2052})
    )  # fmt: skip
    records.append(point(1.3, ok=False, problem="vegeta sent 180 requests/s of the 247 offered"))
    (tmp_path / "results.json").write_text(json.dumps({"metadata": METADATA, "results": records}))
    render(tmp_path)
    markdown = (tmp_path / "results.md").read_text()
    rows = [line for line in markdown.splitlines() if line.startswith("| sync-gunicorn")]
    assert "| 209 (110%) | 209.0 | **150.2** | 100.0% | 1010 | 1020 | 4200 | 4800 | – |" in rows[2]
    assert "| **90.0** | 90.0% | 1010 | 1020 | failed | failed | timeout 228 |" in rows[3]
    assert "**FAILED**: vegeta sent 180" in rows[4] and rows[4].count("|") == rows[0].count("|")
    assert "Not OK: gunicorn-sync" in markdown
    assert (tmp_path / "latency.png").read_bytes()[:4] == b"\x89PNG"


def test_latency_set_gets_its_page_too(tmp_path: Path) -> None:
    records = [point(0.5, base_command="hey -n 600 -c 200"), point(1.1, achieved_rps=150.2, keeps_up=False)]
    (tmp_path / "results.json").write_text(json.dumps({"metadata": METADATA, "results": records}))
    render(tmp_path)
    page = (tmp_path / "index.html").read_text()
    assert page.count('src="data:image/png;base64,') == 1  # latency.png, inside the page
    assert "vegeta, open loop" in page and "<strong>150.2</strong>" in page
    assert page.count("base rate: <code>hey -n 600 -c 200</code>") == 1  # once per target, not per rate


def test_the_record_names_every_percentile_vegeta_measures() -> None:
    # load_at copies them one by one: one vegeta added would otherwise be dropped without a word.
    percentiles = {member.name for member in fields(LatencyResult) if re.fullmatch(r"p\d+_ms", member.name)}
    assert percentiles == set(vegeta.PERCENTILES)


def run_with_fakes(monkeypatch: pytest.MonkeyPatch, out: Path, arguments: list[str]) -> str:
    """main() with Docker, hey and vegeta faked: sync-waitress does not start, sync-view is not verified,
    async-view's base output does not parse; vegeta fails at 200 requests/s, sends half of 300 and more."""

    class Start(FakeStart):
        def up(self, scenario: str) -> str:
            if scenario == "sync-waitress":
                self.problem = "did not come up"
                raise RuntimeError(self.problem)
            return scenario

        def __exit__(self, kind: type | None, *rest: object) -> bool:
            return kind is RuntimeError

    def parse(output: str) -> SimpleNamespace:
        if output == "async-view":
            raise ValueError("no summary")
        return SimpleNamespace(complete=600, failed=1, non2xx=2, seconds=3.0)

    def attack(url: str, rate: int, duration: float, container: object) -> tuple[list[str], str]:
        if rate == 200:
            raise ValueError("vegeta: no results")
        return ["vegeta", "attack", f"-rate={rate}", url], ""

    def parse_results(output: str, rate: int, expected: str) -> vegeta.OpenLoopResult:
        sent = rate * (0.5 if rate >= 300 else 1.0)
        return vegeta.OpenLoopResult(
            offered_rps=rate, requests=rate * 10, sent_rps=sent, achieved_rps=sent * 0.99, success_ratio=0.75,
            status_codes={"200": rate * 10}, failure_kinds={"timeout": 3}, max_ms=None, send_lag_ms_max=0.123,
            percentiles_ms={"p50_ms": 1001.5, "p90_ms": 1010.0, "p99_ms": 1020.25, "p999_ms": None},
        )  # fmt: skip

    hey = SimpleNamespace(place="host", loadgen=SimpleNamespace(name="hey", parse=parse))
    fakes = {
        "ResultSet": result_set_with(METADATA), "ScenarioStart": Start,
        "RunningScenario": str, "choose_client": lambda *_: hey,
        "shutil": SimpleNamespace(which=lambda _: "/usr/bin/vegeta"), "warm_up": lambda *_: None,
        "verify": lambda target, _: "answered in 0.001 s" if target.name == "sync-view" else None,
        "run_loadgen": lambda target, _running, _client, n, c, _delay: (["hey", f"-n {n}", f"-c {c}"], target.name),
        "vegeta": SimpleNamespace(PERCENTILES=vegeta.PERCENTILES, attack=attack, parse_results=parse_results),
        "renderer": SimpleNamespace(render=lambda *_: None),
    }  # fmt: skip
    for name, fake in fakes.items():
        monkeypatch.setattr(latency, name, fake)
    latency.main([*arguments, "--out", str(out)])
    return (out / store.FILE).read_text()


TARGET_KEYS = ["scenario", "target", "server", "mode", "workers", "threads_per_worker", "gevent_cores", "concurrency"]
CHECKED = [*TARGET_KEYS, "delay", "loadgen", "keepalive", "client", "verified", "problem"]
BASE = ["base_command", "base_rps", "base_failed"]
LOAD = [
    "fraction", "command", "offered_rps", "duration_s", "requests", "sent_rps", "achieved_rps", "success_ratio",
    "keeps_up", "status_codes", "failure_kinds", "p50_ms", "p90_ms", "p99_ms", "p999_ms", "max_ms", "send_lag_ms_max",
]  # fmt: skip


def test_every_shape_of_record_is_written_as_before_and_reads_back_as_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The keys each step writes, as the mode wrote them as dicts: absent where the step did not run."""
    fractions = ["--scenarios", "sync-gunicorn", "flask-async-view", "sync-waitress", "--fractions", "0.5 1.5"]
    rates = ["--scenarios", "sync-gunicorn", "--rates", "50 200 300"]
    shapes = {
        "fractions": [
            CHECKED + BASE + LOAD + ["ok"],  # 100 and 298 requests/s: loaded
            CHECKED + BASE + LOAD + ["ok"],
            CHECKED + ["ok"],  # sync-view, not verified
            CHECKED + ["base_command", "ok"],  # async-view: hey's output did not parse
            CHECKED + ["ok"],  # waitress-threads: did not start
        ],
        "rates": [
            CHECKED + LOAD + ["ok"],  # no base: the rate was given
            CHECKED + ["fraction", "offered_rps", "ok"],  # vegeta failed
            CHECKED + LOAD + ["ok"],  # vegeta could not send the rate
        ],
    }
    for name, arguments in (("fractions", fractions), ("rates", rates)):
        (tmp_path / name).mkdir()
        text = run_with_fakes(monkeypatch, tmp_path / name, arguments)
        document = json.loads(text)
        assert [list(record) for record in document["results"]] == shapes[name]
        records = store.load(tmp_path / name).records_of(LatencyResult)
        assert json.dumps(document | {"results": [r.to_json() for r in records]}, indent=2) + "\n" == text
    (vegeta_failed, machine_paced) = document["results"][1:]
    assert vegeta_failed["fraction"] is None and vegeta_failed["problem"] == "vegeta: no results"
    assert machine_paced["ok"] is False and machine_paced["p999_ms"] is None and machine_paced["max_ms"] is None
    # A misspelt field: mypy refuses it in bench/, and at run time it is an exception, not a key of its own.
    with pytest.raises(TypeError, match="p50ms"):
        replace(records[0], p50ms=1.0)
