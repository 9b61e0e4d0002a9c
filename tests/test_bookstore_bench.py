"""`make bookstore` (bench/modes/bookstore/run.py): the pgbench scripts made from the app's captured SQL, pgbench's and
wrk's reports, the tables and charts from JSON alone; and in Docker, the scripts from a real capture replayed against
the real database, and a tiny run of the whole mode."""

from __future__ import annotations

import argparse
import json
import math
import shutil
import subprocess
import tempfile
from dataclasses import replace
from pathlib import Path

import pytest

from bench.containers.compose import RunningScenario
from bench.containers.sampler import SAMPLER_IMAGE
from bench.loadgen import pgbench
from bench.measure import bookstore, host_probe, profile
from bench.modes.bookstore import pgbench_replay as bookstore_pgbench
from bench.modes.bookstore import postgres_work
from bench.modes.bookstore import render as bookstore_renderer
from bench.modes.bookstore import round as bookstore_round
from bench.modes.bookstore import run as bookstore_mode
from bench.modes.bookstore import wrk_load as bookstore_wrk
from bench.modes.bookstore.record import BookstoreResult
from bench.sets import render
from tests.conftest import read_back_as_written, tool_beside_a_server
from tests.cpu_share import premise_checked

OUTPUTS = Path(__file__).parent / "loadgen_outputs"
SCALE = 2100  # the size tests/test_bookstore.py uses: one small volume for both


def capture(author_id: int, transaction: bool = True) -> dict:
    """What bookstore/capture.py prints for GET /author/<id>: SQLAlchemy's statements with psycopg's placeholders."""
    return {
        "status": 200,
        "transaction": transaction,
        "statements": [
            {
                "sql": "SELECT authors.id, authors.name \nFROM authors \nWHERE authors.id = %(pk_1)s::BIGINT",
                "parameters": {"pk_1": author_id},
            },
            {
                "sql": "SELECT books.id FROM books WHERE books.author_id IN (%(primary_keys_1)s::BIGINT)"
                " AND books.title LIKE %(title_1)s ORDER BY books.id LIMIT %(param_1)s::INTEGER",
                "parameters": {"primary_keys_1": author_id, "title_1": "Book 1%%", "param_1": 20},
            },
        ],
    }


def test_the_captured_input_becomes_a_variable_and_the_rest_literals() -> None:
    lines = pgbench.template([(700, capture(700)), (1057, capture(1057))], "id")
    assert lines == [
        "SELECT authors.id, authors.name FROM authors WHERE authors.id = :id::BIGINT;",
        "SELECT books.id FROM books WHERE books.author_id IN (:id::BIGINT) AND books.title LIKE 'Book 1%%'"
        " ORDER BY books.id LIMIT 20::INTEGER;",
    ]
    script = pgbench.script(pgbench.Variable("id", 1, SCALE), pgbench.in_transaction(capture(1), lines, "ROLLBACK"))
    assert script.splitlines()[0] == "\\set id random(1, 2100)"
    assert script.splitlines()[1] == "BEGIN;" and script.splitlines()[-1] == "ROLLBACK;"
    # Without a transaction in the capture, none is added.
    assert pgbench.in_transaction(capture(1, transaction=False), lines, "COMMIT") == lines


def test_captures_that_send_other_sql_fail_clearly() -> None:
    other = capture(1057)
    other["statements"][1]["parameters"]["param_1"] = 10  # another statement for another id: no one script
    with pytest.raises(pgbench.TemplateError, match=r"id=700 and id=1057 send different SQL \(statement 2: "):
        pgbench.template([(700, capture(700)), (1057, other)], "id")
    shorter = capture(1057)
    del shorter["statements"][1]
    with pytest.raises(pgbench.TemplateError, match="2 statements vs 1"):
        pgbench.template([(700, capture(700)), (1057, shorter)], "id")
    with pytest.raises(pgbench.TemplateError, match="answered 404"):
        pgbench.template([(700, capture(700) | {"status": 404}), (1057, capture(1057))], "id")
    # An input that no parameter carries would make a script that never varies.
    with pytest.raises(pgbench.TemplateError, match="no parameter equals the captured id"):
        pgbench.template([(5, capture(700)), (6, capture(700))], "id")


def test_literals_as_postgres_reads_them() -> None:
    assert pgbench.sql_literal(None) == "NULL"
    assert pgbench.sql_literal(True) == "true"
    assert pgbench.sql_literal(42) == "42"
    assert pgbench.sql_literal("O'Brien") == "'O''Brien'"
    assert pgbench.sql_literal([1, 2]) == "ARRAY[1, 2]"
    # In prepared mode pgbench reads ":00" as a variable even inside a string: refused, not replayed wrongly.
    with pytest.raises(pgbench.TemplateError, match="colon"):
        pgbench.sql_literal("12:00:00")
    assert pgbench.Variable("offset", 500_000, 500_980, 20).set_line() == "\\set offset 500000 + 20 * random(0, 49)"


def test_positional_and_numbered_placeholders() -> None:
    positional = {"status": 201, "statements": [{"sql": "INSERT INTO t VALUES (%s, %s)", "parameters": [7, "x"]}]}
    assert pgbench.fixed(positional) == ["INSERT INTO t VALUES (7, 'x');"]
    numbered = {"status": 200, "statements": [{"sql": "SELECT $2, $1", "parameters": [7, 8]}]}
    assert pgbench.template([(7, numbered), (7, numbered)], "id") == ["SELECT 8, :id;"]


def test_pgbench_reports() -> None:
    clean = pgbench.parse((OUTPUTS / "pgbench-clean.txt").read_text())
    assert (clean.transactions, clean.failed, clean.tps, clean.latency_ms) == (51, 0, 16.699334, 239.531)
    # Two weighted scripts: the run's total, not a script's own line.
    assert pgbench.parse((OUTPUTS / "pgbench-mixed.txt").read_text()).tps == 13104.382507
    with pytest.raises(ValueError, match='relation "missing_table" does not exist'):
        pgbench.parse((OUTPUTS / "pgbench-aborted.txt").read_text())
    with pytest.raises(ValueError, match="no summary"):
        pgbench.parse("pgbench (17.12)\n")
    command = pgbench.command({"/scripts/author.sql": 90, "/scripts/write.sql": 10}, 1, 12, "bookstore", "extended")
    assert command[command.index("--protocol") + 1] == "extended"
    assert command[-5:] == ["--file", "/scripts/author.sql@90", "--file", "/scripts/write.sql@10", "bookstore"]
    assert command[command.index("--jobs") + 1] == "1"  # pgbench refuses more threads than clients


def test_the_ladder_is_the_unchanged_app_then_its_rungs() -> None:
    every = bookstore.bookstore_targets({})
    ways = bookstore_mode.chosen_targets(every, None, ladder=False)
    assert ways and all(target.rung is None and target.reads_end_with is None for target in ways)
    ladder = bookstore_mode.chosen_targets(every, None, ladder=True)
    assert [target.rung for target in ladder] == list(range(len(ladder))) and len(ladder) >= 6
    assert ladder[0].name == bookstore_mode.LADDER_BASE and ladder[0].reads_end_with is None  # the app as written
    assert all(target.reads_end_with == "commit" for target in ladder[1:])  # from the first rung on
    # A rung's records say the ending it fixes, whatever the run's; the ways' say the run's.
    record = bookstore_round.bookstore_fields(ladder[1], bookstore.BY_NAME["author"], 1000, 3, "rollback")
    assert (record.reads_end_with, record.pgbench_protocol, record.rung) == ("commit", "prepared", 1)
    assert record.target == ladder[1].name
    paced = pgbench.command({"/scripts/author.sql": 100}, 16, 8, "bookstore", "prepared", rate=241.37)
    assert paced[paced.index("--rate") + 1] == "241.4"
    assert "--rate" not in pgbench.command({"/scripts/author.sql": 100}, 16, 8, "bookstore", "prepared")


def test_loads_and_their_scripts() -> None:
    mixed, slow = bookstore.BY_NAME["mixed"], bookstore.BY_NAME["slow"]
    assert bookstore_pgbench.weights(mixed) == {"author.sql": 90, "write.sql": 10}
    assert bookstore_pgbench.weights(slow) == {"slow.sql": 100}
    # At the default size the list loads read the article's pages: offsets 50,000 and 500,000.
    assert bookstore.BY_NAME["moderate"].first_offset(1_000_000) == 50_000
    assert slow.first_offset(1_000_000) == 500_000
    # A sweep runs the author and slow loads from below their pool to far past it; --clients sets every load's.
    sweep, given = argparse.Namespace(clients=None, sweep=True), argparse.Namespace(clients=[5], sweep=True)
    assert bookstore_mode.clients_of(sweep, "author") == [8, 32, 128, 512]
    assert bookstore_mode.clients_of(sweep, "mixed") == [32]
    assert bookstore_mode.clients_of(given, "slow") == [5]
    assert bookstore_mode.profiled_clients([replace(slow, clients=c) for c in (4, 16, 64)]) == {("slow", 16)}
    arguments = bookstore_wrk.lua_arguments(mixed, 1000, "token")
    assert arguments[:6] == ["mixed", "1000", "0", "50", "100", "token"]
    assert "@@MARKER@@" in json.loads(arguments[6])["name"]
    line = (
        'BOOKSTORE {"statuses": {"200": 90, "201": 2, "503": 1}, "acknowledged_writes": 2, "acknowledged": ["a", "b"]}'
    )
    counts = bookstore_wrk.parse_counts(f"Requests/sec: 10\n{line}\n")
    assert counts["statuses"]["503"] == 1 and counts["acknowledged"] == ["a", "b"]
    with pytest.raises(ValueError, match="no BOOKSTORE line"):
        bookstore_wrk.parse_counts("Requests/sec: 10\n")


def test_the_wrk_script_spreads_ids_and_marks_each_write(tmp_path: Path) -> None:
    """bench/modes/bookstore.lua in the real wrk against a tiny local server that records every request."""
    server = tmp_path / "server.py"
    server.write_text(
        "import json, sys\n"
        "from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer\n"
        "class Handler(BaseHTTPRequestHandler):\n"
        "    protocol_version = 'HTTP/1.1'\n"
        "    def log_message(self, *args): pass\n"
        "    def answer(self, status, body=b''):\n"
        "        self.send_response(status); self.send_header('Content-Length', str(len(body))); self.end_headers()\n"
        "        self.wfile.write(body)\n"
        "    def do_GET(self):\n"
        "        open(sys.argv[2], 'a').write(self.path + '\\n'); self.answer(200)\n"
        "    def do_POST(self):\n"
        "        body = self.rfile.read(int(self.headers['Content-Length'])).decode()\n"
        "        open(sys.argv[2], 'a').write('POST ' + body + '\\n')\n"
        "        name = json.loads(body)['name']\n"  # the app's 201 names the author written, as this does
        "        self.answer(201, json.dumps({'id': 7, 'name': name}, separators=(',', ':')).encode())\n"
        "server = ThreadingHTTPServer((sys.argv[3], int(sys.argv[1])), Handler)\n"
        "print(server.server_address[1], flush=True)\n"
        "server.serve_forever()\n"
    )
    seen = tmp_path / "seen.txt"
    arguments = bookstore_wrk.lua_arguments(bookstore.BY_NAME["mixed"], 1000, "tok")
    script = ["-t", "2", "-c", "4", "-d", "2s", "-s", str(bookstore_wrk.LUA)]
    if shutil.which("wrk"):
        process = subprocess.Popen(
            ["python3", str(server), "0", str(seen), "127.0.0.1"], stdout=subprocess.PIPE, text=True
        )
        try:
            port = int(process.stdout.readline())  # type: ignore[union-attr]
            command = ["wrk", *script, f"http://127.0.0.1:{port}", "--", *arguments]
            output = subprocess.run(command, capture_output=True, text=True, timeout=30).stdout
        finally:
            process.terminate()
            process.wait()
    else:  # wrk in its container, the server in the sampler's image beside it
        serve = ["python", str(server), "8000", str(seen), "0.0.0.0"]
        mounts = (bookstore_wrk.LUA.parent, tmp_path)
        with tool_beside_a_server("wrk", SAMPLER_IMAGE, serve, 8000, mounts) as (wrk, url):
            command = [*wrk, *script, url.rstrip("/"), "--", *arguments]
            output = subprocess.run(command, capture_output=True, text=True, timeout=30).stdout
    counts = bookstore_wrk.parse_counts(output)
    requests = seen.read_text().splitlines()
    writes = [json.loads(line.removeprefix("POST "))["name"] for line in requests if line.startswith("POST ")]
    ids = [int(line.removeprefix("/author/")) for line in requests if line.startswith("/author/")]
    assert len(requests) > 50, output
    # The server may have taken a few writes whose answers came after wrk stopped: one per connection at most.
    assert counts["acknowledged_writes"] == counts["statuses"]["201"] <= len(writes) <= counts["statuses"]["201"] + 4
    assert len(set(writes)) == len(writes) and all(name.startswith("tok-") for name in writes)
    # Each acknowledged write by its marker, as the server answered it: what the harness looks up one by one.
    assert len(counts["acknowledged"]) == counts["acknowledged_writes"] and set(counts["acknowledged"]) <= set(writes)
    assert 0.03 < len(writes) / len(requests) < 0.2
    # Spread over the whole table, and the two threads not in step (each seeded apart): about as many different
    # ids as uniform draws give, where two threads drawing the same sequence would give half as many.
    assert all(1 <= i <= 1000 for i in ids) and min(ids) < 100 and max(ids) > 900
    assert len(set(ids)) > 0.85 * 1000 * (1 - math.exp(-len(ids) / 1000)), (len(set(ids)), len(ids))


def record(target: str, load: str, rps: float, tps: float, ok: bool = True) -> dict:
    return {
        "scenario": "bookstore", "target": target, "server": "gunicorn", "mode": "gevent", "workers": 1,
        "threads_per_worker": None, "gevent_cores": 1000, "concurrency": 1000, "db_pool": 16, "load": load,
        "request": "GET /author/<random id>", "clients": 32, "db_clients": 16, "scale": 1000, "seconds": 12,
        "loadgen": "wrk", "client": "container",
        "verified": True, "problem": None if ok else "wrk counted 3 failures", "ok": ok, "rps": rps,
        "complete": round(rps * 12), "p50_ms": 50.0, "p99_ms": 180.0, "failed": 0 if ok else 3, "non2xx": 0,
        "statuses": {"200": round(rps * 12)}, "status_503": 0, "writes_acknowledged": 0,
        "app_cpu_ms_per_request": 4.5, "pg_cpu_ms_per_request": 0.6, "app_container_cpu_ms_per_request": 4.7,
        "app_rss_mb_peak": 90.0, "app_threads_peak": 3, "pg_memory_mb_peak": 60.0, "pg_sessions_peak": 16,
        "pg_busy_peak": 12, "machine_busy": 0.97, "pgbench_tps": tps, "pgbench_transactions": round(tps * 12),
        "pgbench_failed": 0, "pgbench_latency_ms": 4.0, "pgbench_pg_cpu_ms_per_transaction": 0.4,
        "pgbench_busy_peak": 16, "pgbench_command": "docker run ... pgbench", "command": "docker run ... wrk",
        "pgbench_scripts": {"author.sql": "\\set id random(1, 1000)\nSELECT :id;\n"},
        "vs_database": round(rps / tps, 3), "cpu_probe_s_before": 0.1, "cpu_probe_s_after": 0.11,
    }  # fmt: skip


def test_a_set_renders_from_its_json_alone(tmp_path: Path) -> None:
    metadata = {
        "date": "2026-11-23T23:40:00+00:00", "git_commit": "abc1234", "cpu_count": 2, "kernel": "6.1",
        "docker_version": "20.10.24", "compose_version": "2.26.1", "command": "python -m bench.modes.bookstore",
        "mode": "bookstore", "packages": {}, "scale": 1000, "seconds": 12,
        "database": {"authors": 1000, "books": 10000, "size": "9 MB"},
    }  # fmt: skip
    records = [
        record("bookstore-gunicorn-gevent", "author", 400.0, 4000.0),
        record("bookstore-granian", "author", 300.0, 4100.0, ok=False),
        record("bookstore-gunicorn-gevent", "slow", 9.0, 10.0),
    ]
    (tmp_path / "results.json").write_text(json.dumps({"metadata": metadata, "results": records}))
    render(tmp_path)  # python -m bench.render OUT: the bookstore's own tables and charts
    markdown = (tmp_path / "results.md").read_text()
    assert "| author | bookstore-gunicorn-gevent | gunicorn | gevent | 32 → 16 | 400.0 | 4000.0 | 10% |" in markdown
    assert "| slow | bookstore-gunicorn-gevent | gunicorn | gevent | 32 → 16 | 9.00 | 10.0 | 90% |" in markdown
    assert "**FAILED**: wrk counted 3 failures (300.0)" in markdown
    assert "**Not OK: bookstore-granian / author**" in markdown
    for chart in bookstore_renderer.CHARTS:
        assert (tmp_path / chart).read_bytes()[:4] == b"\x89PNG"
    page = (tmp_path / "index.html").read_text()
    assert page.count('<table class="sortable">') == 2
    assert 'data-sort="0.9"' in page  # the share sorts by its number


def test_a_repeated_swept_set_shows_medians_ranges_and_where_each_way_queues(tmp_path: Path) -> None:
    metadata = {
        "date": "2026-11-25T01:40:00+00:00", "git_commit": "abc1234", "cpu_count": 2, "kernel": "6.1",
        "docker_version": "20.10.24", "compose_version": "2.26.1", "command": "python -m bench.modes.bookstore",
        "mode": "bookstore", "packages": {}, "scale": 1000, "seconds": 12, "repeat": 3,
        "database": {"authors": 1000, "books": 10000, "size": "9 MB"},
    }  # fmt: skip
    records = []
    for repeat, (slow, fast) in enumerate([(300.0, 400.0), (330.0, 390.0), (310.0, 420.0)], start=1):
        for clients, rate in ((8, slow), (32, fast)):
            run = record("bookstore-gunicorn-gevent", "author", rate, 4000.0) | {"clients": clients, "repeat": repeat}
            probes = {"cpu_probe_s_before": 0.1, "cpu_probe_s_after": 0.1 if repeat < 3 else 0.14}
            records.append(run | probes | {"steady": repeat < 3, "cpu_probe_moved": 1.0 if repeat < 3 else 1.4})
    records[0] |= {"warm_up_s": 10, "warm_up_cpu_ms_per_request": [5.1, 4.9]}
    records[0] |= {"profile": {"driver (psycopg)": 0.2, "SQLAlchemy": 0.5, "server": 0.3}, "profile_samples": 900}
    (tmp_path / "results.json").write_text(json.dumps({"metadata": metadata, "results": records}))
    render(tmp_path)
    markdown = (tmp_path / "results.md").read_text()
    # One row per load, clients and target: the median run's throughput with the range of the three.
    assert (
        "| author | bookstore-gunicorn-gevent | gunicorn | gevent | 8 → 16 | 310.0 (300.0–330.0) | 4000.0 | 8%"
        in markdown
    )
    assert "| 32 → 16 | 400.0 (390.0–420.0) | 4000.0 | 10% (10%–10%) |" in markdown
    assert markdown.count("| author | bookstore-gunicorn-gevent | gunicorn |") == 2
    assert "| CPU steady |" in markdown and "| 2 of 3 (x1.40) |" in markdown
    assert "Every load 3 times, in rounds" in markdown and "bookstore-gunicorn-gevent 10 s" in markdown
    assert bookstore_renderer.SWEEP_CHART in markdown
    assert (tmp_path / bookstore_renderer.SWEEP_CHART).read_bytes()[:4] == b"\x89PNG"
    # The profile: the app's 4.5 ms per request split by where py-spy sampled it.
    assert "| author | bookstore-gunicorn-gevent | 8 | 4.50 | 0.90 (20%) | 2.25 (50%) | 1.35 (30%) | 900 |" in markdown
    assert (tmp_path / bookstore_renderer.PROFILE_CHART).read_bytes()[:4] == b"\x89PNG"


def test_a_sample_counts_where_its_innermost_known_frame_is() -> None:
    site = "/usr/local/lib/python3.14/site-packages"
    server = f"handle (gunicorn/workers/base_async.py:55);wsgi_app ({site}/flask/app.py:1511)"
    collapsed = "\n".join([
        f"{server};get_author (/app/app.py:60);execute ({site}/sqlalchemy/orm/session.py:2300);"
        f"execute ({site}/psycopg/cursor.py:97) 30",  # the driver, called by SQLAlchemy, called by the app
        f"{server};dump ({site}/marshmallow/schema.py:540) 20",
        f"{server};jsonify ({site}/flask/json/provider.py:180);encode ({site}/../json/encoder.py:200) 10",
        f"{server} 15",  # Flask's own work
        "run (/usr/local/lib/python3.14/site-packages/gunicorn/arbiter.py:220) 5",
        "<module> (/usr/local/lib/python3.14/logging/__init__.py:1000) 20",
    ])  # fmt: skip
    found, samples = profile.shares(collapsed)
    assert samples == 100
    assert found == {"driver (psycopg)": 0.3, "marshmallow": 0.2, "JSON": 0.1, "Flask and Werkzeug": 0.15,
                     "server": 0.05, profile.OTHER: 0.2}  # fmt: skip
    assert profile.shares("") == ({}, 0)


# --- In Docker: the real app, the real database ----------------------------------------------------------------


@pytest.mark.docker
def test_scripts_from_a_real_capture_replay_against_the_database(small_volume: None, tmp_path: Path) -> None:
    """The SQL captured from the running app, templated and run by pgbench on the scenario's network: every
    script runs without a failed transaction, and the write script's rows are the ones it says."""
    environment = {"BOOKSTORE_SCALE": str(SCALE)}
    (target,) = [t for t in bookstore.bookstore_targets(environment) if t.name == "bookstore-gunicorn-gevent"]
    with bookstore.BookstoreScenario(environment, [target.service]) as running:
        texts = bookstore_pgbench.scripts(running, target.service, SCALE, "rollback")
        assert texts["author.sql"].startswith(f"\\set id random(1, {SCALE})\nBEGIN;\nSELECT ")
        assert texts["author.sql"].count(":id") >= 2 and texts["author.sql"].endswith("ROLLBACK;\n")
        assert texts["slow.sql"].startswith(f"\\set offset {SCALE // 2} + 20 * random(0, 49)\nBEGIN;\n")
        assert "OFFSET :offset" in texts["slow.sql"]
        assert "INSERT INTO authors" in texts["write.sql"] and texts["write.sql"].endswith("COMMIT;\n")
        tmp_path.chmod(0o755)
        for name, text in texts.items():
            (tmp_path / name).write_text(text)
        idle = postgres_work.measure_idle(running)
        # Idle, Postgres runs only the healthchecks' statements: the app's (one every 5 s, bookstore.yml: about 2 in
        # the window) and no others, give or take the count's own read and a probe at each end of the window.
        assert 1 <= idle.statements.get("SELECT", 0) <= 6, idle
        for load in bookstore.LOADS:
            measured = bookstore_pgbench.measure_database(running, load, 2, 2, tmp_path, "extended", idle)
            assert measured.pgbench_problem is None, measured
            assert measured.pgbench_transactions and measured.pgbench_failed == 0, measured
            assert measured.pgbench_pg_cpu_ms_per_transaction and measured.pgbench_pg_cpu_ms_per_transaction > 0
            # Postgres's own count of what pgbench ran, the healthchecks' taken off: a BEGIN and a ROLLBACK or
            # COMMIT a transaction (sent unnamed, so counted: not when prepared), and at least a SELECT. The
            # healthchecks taken off are those of as long idle: under load one or two more or fewer ran (a CI run:
            # 0.999 SELECTs a transaction of the slow script, which has one), hence the same margin for both.
            statements = measured.pgbench_statements_per_transaction or {}
            ends = statements.get("ROLLBACK", 0) + statements.get("COMMIT", 0)
            assert statements["BEGIN"] == pytest.approx(1, abs=0.05) == ends, measured
            assert statements["SELECT"] >= 1 - 0.05, measured
        marked = f"SELECT count(*) FROM authors WHERE name LIKE '{bookstore.MARKER_PREFIX}%'"
        assert int(bookstore.psql(running, marked)) > 0  # the mixed load's writes, and the capture's
        bookstore.remove_writes(running)
        assert bookstore.psql(running, marked) == "0"


@pytest.mark.docker
@premise_checked  # pgbench paced at each app's rate must reach it: on 1.3 cores behind the others' loads, 115 of 187
def test_a_tiny_bookstore_run_makes_a_valid_set(
    small_volume: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two targets, the mixed load for 3 s, with reads that roll back and then commit: each round measures the
    targets in turn and the database alone once for both; verified, every write found, rendered. granian's
    processes are read as where this machine cannot see them (Docker Desktop): through the engine, all the same."""
    out = Path(tempfile.mkdtemp(dir=tmp_path))  # a try made again writes a set of its own
    (granian,) = [t.service for t in bookstore.bookstore_targets({}) if t.name == "bookstore-granian"]
    seen = RunningScenario.sees_processes
    monkeypatch.setattr(
        RunningScenario, "sees_processes", lambda self, service: service != granian and seen(self, service)
    )
    arguments = ["--scale", str(SCALE), "--targets", "bookstore-gunicorn-gevent", "bookstore-granian"]
    arguments += ["--loads", "mixed", "--clients", "8", "--reads-end-with", "rollback", "commit"]
    arguments += ["--seconds", "3", "--warm-limit", "3", "--profile-seconds", "1", "--at-app-rate"]
    assert bookstore_mode.main([*arguments, "--out", str(out)]) == 0
    document = json.loads((out / "results.json").read_text())
    assert document["metadata"]["mode"] == "bookstore" and document["metadata"]["cpu_model"], document["metadata"]
    assert document["metadata"]["command"].startswith("python -m bench.modes.bookstore --scale 2100")
    assert document["metadata"]["database"]["authors"] >= SCALE  # and what other tests' writes left
    records = document["results"]
    read_back_as_written(out, BookstoreResult)
    named = [f"{name}{suffix}" for suffix in ("", " READS_END_WITH=commit") for name in arguments[3:5]]
    assert [r["target"] for r in records] == named, records
    for ending in ("rollback", "commit"):
        # One reference per round, shared by the two targets: the same SQL, clients and protocol.
        pair = [r for r in records if r["reads_end_with"] == ending]
        assert pair[0]["pgbench_command"] == pair[1]["pgbench_command"], pair
        assert pair[0]["pgbench_tps"] == pair[1]["pgbench_tps"], pair
        assert pair[0]["pgbench_scripts"] == pair[1]["pgbench_scripts"], pair
        protocol = pgbench.PROTOCOL[ending]
        assert all(r["pgbench_protocol"] == protocol and f"--protocol {protocol}" in r["pgbench_command"] for r in pair)
        assert pair[0]["pgbench_scripts"]["author.sql"].endswith(f"{ending.upper()};\n"), pair
    for measured in records:
        assert measured["ok"], measured
        assert (measured["clients"], measured["db_clients"], measured["repeat"]) == (8, 8, 1), measured
        # Its own sessions (the other target, paused, keeps its pool's open): its pool and a health check's a process.
        # Busy: the 8 clients' and, where Docker's healthcheck ran a query meanwhile, its own (a CI run: 9, the
        # healthcheck slower beside another part's load).
        most_busy = 8 + measured["workers"]
        assert 1 <= measured["pg_busy_peak"] <= most_busy, measured
        assert measured["pg_sessions_peak"] <= 16 + measured["workers"], measured
        assert measured["rps"] > 5 and measured["pgbench_tps"] > 5, measured
        assert measured["vs_database"] == pytest.approx(measured["rps"] / measured["pgbench_tps"], abs=0.001)
        # Every acknowledged write is in the database, looked up by its marker; a row without its 201 was in
        # flight when wrk stopped.
        assert measured["writes_acknowledged"] > 0 and measured["writes_lost"] == 0, measured
        assert measured["writes_found"] >= measured["writes_acknowledged"], measured
        assert measured["writes_unacknowledged"] <= measured["clients"], measured
        # What a request made Postgres do, by Postgres's count, the healthchecks' statements taken off: one
        # transaction, begun and ended as the reads end (the writes commit).
        statements, ending = measured["pg_statements_per_request"], measured["reads_end_with"].upper()
        assert measured["pg_transactions_per_request"] == pytest.approx(1, abs=0.05), measured
        assert statements["BEGIN"] == pytest.approx(1, abs=0.05) and statements["SELECT"] >= 1, measured
        # A tenth of the mix writes, drawn at random: within four standard deviations of the load's own count (a
        # run under 1.3 cores answered so few that one in seven wrote).
        writes_spread = 4 * (0.1 * 0.9 / measured["complete"]) ** 0.5
        assert statements["INSERT"] == pytest.approx(0.1, abs=max(0.05, writes_spread)), measured
        assert statements[ending] >= (0.85 if ending == "ROLLBACK" else 0.95), measured
        # pgbench ran the same statements a transaction as the app a request: it stands for the app.
        alone = measured["pgbench_statements_per_transaction"]
        assert alone["SELECT"] == pytest.approx(statements["SELECT"], rel=0.1), measured
        assert alone["INSERT"] == pytest.approx(statements["INSERT"], abs=0.05), measured  # drawn at random: 10 %
        assert measured["served"] == sum(n for s, n in measured["statuses"].items() if s.startswith("2")), measured
        assert measured["pg_cpu_ms_per_request"] < measured["pg_cpu_ms_per_request_gross"], measured
        assert measured["pg_idle_cpu_ms_per_s"] > 0 and measured["pg_cpu_ms_per_transaction"] > 0, measured
        assert measured["app_cpu_ms_per_request"] > 0 and isinstance(measured["cpu_probe"]["steady"], bool), measured
        assert measured["threads_peak"] > 0 and measured["pg_memory_mb_peak"] > 0, measured
        assert "not_sampled" not in measured, measured
        way = "through the engine: docker" if measured["target"].startswith("bookstore-granian") else "this machine"
        assert measured["sampled_on"] == way, measured
        host = measured["cpu_probe"]["seconds"]["host"]  # the four probes around wrk and pgbench
        assert list(host) == list(host_probe.MOMENTS) and all(seconds > 0 for seconds in host.values()), measured
        # The database alone again, paced to this target's own rate: pgbench keeps to it (far below its own).
        assert f"--rate {measured['rps']:.1f}" in measured["pgbench_at_app_rate_command"], measured
        assert measured["pgbench_at_app_rate_tps"] == pytest.approx(measured["rps"], rel=0.2), measured
        assert measured["pgbench_at_app_rate_pg_cpu_ms_per_transaction"] > 0, measured
    # py-spy found each server's CPU in the ORM and the driver, among the rest, and its samples are in the set.
    for measured in records:
        assert "profile_problem" not in measured, measured["profile_problem"]
        assert measured["profile_samples"] > 50 and measured["profile"]["SQLAlchemy"] > 0.05, measured
        assert measured["profile"]["driver (psycopg)"] > 0, measured
        assert (out / measured["profile_stacks"]).read_text().count("sqlalchemy") > 10
    # Each target's first measurement after its containers were made says how long it warmed up.
    assert all(r["warm_up_s"] == 3 and len(r["warm_up_cpu_ms_per_request"]) == 1 for r in records), records
    markdown = (out / "results.md").read_text()
    assert "| mixed | bookstore-gunicorn-gevent READS_END_WITH=commit |" in markdown
    assert "| CPU steady |" in markdown and "Warm-up until the CPU per request stopped falling" in markdown
    granian = "bookstore-granian, bookstore-granian READS_END_WITH=commit"
    assert f"Read through the engine, not on this machine: the processes of {granian} (`docker`)." in markdown
    assert (out / "index.html").stat().st_size > 10_000
