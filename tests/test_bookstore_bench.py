"""`make bookstore` (bench/modes/bookstore.py): the pgbench scripts made from the app's captured SQL, pgbench's and
wrk's reports, the tables and charts from JSON alone; and in Docker, the scripts from a real capture replayed against
the real database, and a tiny run of the whole mode."""

from __future__ import annotations

import json
import math
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from bench.loadgen import pgbench
from bench.modes import bookstore
from bench.render import bookstore as bookstore_renderer
from bench.render import render
from tests.conftest import loopback_loadgen

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


def test_loads_and_their_scripts() -> None:
    mixed, slow = bookstore.BY_NAME["mixed"], bookstore.BY_NAME["slow"]
    assert bookstore.weights(mixed) == {"author.sql": 90, "write.sql": 10}
    assert bookstore.weights(slow) == {"slow.sql": 100}
    # At the default size the list loads read the article's pages: offsets 50,000 and 500,000.
    assert bookstore.BY_NAME["moderate"].first_offset(1_000_000) == 50_000
    assert slow.first_offset(1_000_000) == 500_000
    arguments = bookstore.lua_arguments(mixed, 1000, "token")
    assert arguments[:6] == ["mixed", "1000", "0", "50", "100", "token"]
    assert "@@MARKER@@" in json.loads(arguments[6])["name"]
    line = 'BOOKSTORE {"statuses": {"200": 90, "201": 9, "503": 1}, "acknowledged_writes": 9}'
    assert bookstore.parse_counts(f"Requests/sec: 10\n{line}\n")["statuses"]["503"] == 1
    with pytest.raises(ValueError, match="no BOOKSTORE line"):
        bookstore.parse_counts("Requests/sec: 10\n")


def test_the_wrk_script_spreads_ids_and_marks_each_write(tmp_path: Path) -> None:
    """bench/modes/bookstore.lua in the real wrk against a tiny local server that records every request."""
    server = tmp_path / "server.py"
    server.write_text(
        "import sys\n"
        "from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer\n"
        "class Handler(BaseHTTPRequestHandler):\n"
        "    protocol_version = 'HTTP/1.1'\n"
        "    def log_message(self, *args): pass\n"
        "    def answer(self, status):\n"
        "        self.send_response(status); self.send_header('Content-Length', '0'); self.end_headers()\n"
        "    def do_GET(self):\n"
        "        open(sys.argv[2], 'a').write(self.path + '\\n'); self.answer(200)\n"
        "    def do_POST(self):\n"
        "        body = self.rfile.read(int(self.headers['Content-Length'])).decode()\n"
        "        open(sys.argv[2], 'a').write('POST ' + body + '\\n'); self.answer(201)\n"
        "server = ThreadingHTTPServer(('127.0.0.1', 0), Handler)\n"
        "print(server.server_address[1], flush=True)\n"
        "server.serve_forever()\n"
    )
    seen = tmp_path / "seen.txt"
    process = subprocess.Popen(["python3", str(server), "0", str(seen)], stdout=subprocess.PIPE, text=True)
    try:
        port = int(process.stdout.readline())  # type: ignore[union-attr]
        arguments = bookstore.lua_arguments(bookstore.BY_NAME["mixed"], 1000, "tok")
        wrk = loopback_loadgen("wrk", mounts=(bookstore.LUA.parent,))
        command = [*wrk, "-t", "2", "-c", "4", "-d", "2s", "-s", str(bookstore.LUA), f"http://127.0.0.1:{port}"]
        output = subprocess.run([*command, "--", *arguments], capture_output=True, text=True, timeout=30).stdout
    finally:
        process.terminate()
        process.wait()
    counts = bookstore.parse_counts(output)
    requests = seen.read_text().splitlines()
    writes = [json.loads(line.removeprefix("POST "))["name"] for line in requests if line.startswith("POST ")]
    ids = [int(line.removeprefix("/author/")) for line in requests if line.startswith("/author/")]
    assert len(requests) > 50, output
    # The server may have taken a few writes whose answers came after wrk stopped: one per connection at most.
    assert counts["acknowledged_writes"] == counts["statuses"]["201"] <= len(writes) <= counts["statuses"]["201"] + 4
    assert len(set(writes)) == len(writes) and all(name.startswith("tok-") for name in writes)
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


# --- In Docker: the real app, the real database ----------------------------------------------------------------


@pytest.fixture
def small_volume() -> Iterator[None]:
    """The small data set, removed afterwards only if this test made it."""
    name = f"flask-playground-bookstore-{SCALE}"
    existed = subprocess.run(["docker", "volume", "inspect", name], capture_output=True).returncode == 0
    yield
    if not existed:
        subprocess.run(["docker", "volume", "rm", "--force", name], capture_output=True)


@pytest.mark.docker
def test_scripts_from_a_real_capture_replay_against_the_database(small_volume: None, tmp_path: Path) -> None:
    """The SQL captured from the running app, templated and run by pgbench on the scenario's network: every
    script runs without a failed transaction, and the write script's rows are the ones it says."""
    environment = {"BOOKSTORE_SCALE": str(SCALE)}
    (target,) = [t for t in bookstore.bookstore_targets(environment) if t.name == "bookstore-gunicorn-gevent"]
    with bookstore.BookstoreScenario(environment, [target.service]) as running:
        texts = bookstore.scripts(running, target.service, SCALE, "test", "rollback")
        assert texts["author.sql"].startswith(f"\\set id random(1, {SCALE})\nBEGIN;\nSELECT ")
        assert texts["author.sql"].count(":id") >= 2 and texts["author.sql"].endswith("ROLLBACK;\n")
        assert texts["slow.sql"].startswith(f"\\set offset {SCALE // 2} + 20 * random(0, 49)\nBEGIN;\n")
        assert "OFFSET :offset" in texts["slow.sql"]
        assert "INSERT INTO authors" in texts["write.sql"] and texts["write.sql"].endswith("COMMIT;\n")
        tmp_path.chmod(0o755)
        for name, text in texts.items():
            (tmp_path / name).write_text(text)
        for load in bookstore.LOADS:
            measured = bookstore.measure_database(running, load, 2, 2, tmp_path, "extended")
            assert measured.get("pgbench_problem") is None, measured
            assert measured["pgbench_transactions"] > 0 and measured["pgbench_failed"] == 0, measured
            assert measured["pgbench_pg_cpu_ms_per_transaction"] > 0, measured
        written = int(bookstore.psql(running, f"SELECT count(*) FROM authors WHERE id > {SCALE}"))
        assert written > 0  # the mixed load's writes, and the capture's
        assert bookstore.count_and_remove_writes(running, "test") > 0
        marked = f"SELECT count(*) FROM authors WHERE name LIKE '{bookstore.MARKER_PREFIX}%'"
        assert bookstore.psql(running, marked) == "0"


@pytest.mark.docker
def test_a_tiny_bookstore_run_makes_a_valid_set(small_volume: None, tmp_path: Path) -> None:
    """One target, the mixed load for 3 s: verified, measured beside pgbench, every write found, rendered."""
    arguments = ["--scale", str(SCALE), "--targets", "bookstore-gunicorn-gevent", "--loads", "mixed"]
    arguments += ["--reads-end-with", "commit"]  # and pgbench prepared, as the app's reads then are
    assert bookstore.main([*arguments, "--seconds", "3", "--out", str(tmp_path)]) == 0
    document = json.loads((tmp_path / "results.json").read_text())
    assert document["metadata"]["mode"] == "bookstore"
    assert document["metadata"]["command"].startswith("python -m bench.modes.bookstore --scale 2100")
    assert document["metadata"]["database"]["authors"] >= SCALE  # and what other tests' writes left
    (measured,) = document["results"]
    assert measured["ok"], measured
    assert (measured["reads_end_with"], measured["pgbench_protocol"]) == ("commit", "prepared"), measured
    assert "--protocol prepared" in measured["pgbench_command"], measured["pgbench_command"]
    assert all(text.endswith("COMMIT;\n") for text in measured["pgbench_scripts"].values()), measured
    assert measured["rps"] > 5 and measured["pgbench_tps"] > 5, measured
    assert measured["vs_database"] == pytest.approx(measured["rps"] / measured["pgbench_tps"], abs=0.001)
    assert measured["db_clients"] == 16 and 1 <= measured["pg_busy_peak"] <= 16 < measured["clients"], measured
    # Every acknowledged write is in the database; a row without its 201 was in flight when wrk stopped.
    assert measured["writes_acknowledged"] > 0 and measured["writes_lost"] == 0, measured
    assert measured["writes_unacknowledged"] <= measured["clients"], measured
    assert measured["app_cpu_ms_per_request"] > 0 and measured["pg_cpu_ms_per_request"] > 0, measured
    assert measured["cpu_probe_s_before"] > 0 and measured["cpu_probe_s_after"] > 0
    assert measured["target"] == "bookstore-gunicorn-gevent READS_END_WITH=commit"  # named after what ran
    assert "| mixed | bookstore-gunicorn-gevent READS_END_WITH=commit |" in (tmp_path / "results.md").read_text()
    assert (tmp_path / "index.html").stat().st_size > 10_000
