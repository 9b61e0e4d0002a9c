"""`make latency`: an open-loop run end to end, and its report rendered from JSON alone."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from bench.modes import latency
from bench.render import render

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
