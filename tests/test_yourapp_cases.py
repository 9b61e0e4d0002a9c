"""make yourapp on apps whose every way was once left out as "differs from the development server" (docs/yourapp.md,
"Verified before it is loaded"), each of its own folder under tests/yourapp_cases/: a Flask-WTF form, whose CSRF
token changes at every answer; a JSON API beside a .flaskenv with FLASK_DEBUG=1, which only `flask run` reads; an
app showing the time, a random id and a salted fingerprint its set-up wrote. Each through two ways: both verified,
both loaded. Its stacks publish on ports of their own (3191, 8191), as tests/test_yourapp.py's do (3190, 8190)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.modes.yourapp import run as yourapp
from bench.modes.yourapp.record import YourAppResult
from bench.results.store import load

pytestmark = pytest.mark.docker

CASES = Path(__file__).parent / "yourapp_cases"
PORTS = ["--port", "3191", "--nginx-port", "8191"]
WAYS = "gunicorn-threads,granian"


def run_case(case: str, out: Path, capsys: pytest.CaptureFixture[str], *options: str) -> tuple[int, str]:
    folder = CASES / case
    status = yourapp.main(["--app", str(folder), "--requests", str(folder / "requests.txt"), "--ways", WAYS,
                           "--clients", "2", "--seconds", "2", "--out", str(out), *PORTS, *options])  # fmt: skip
    captured = capsys.readouterr()
    return status, captured.out + captured.err


def assert_every_way_verified_and_loaded(out: Path, output: str) -> None:
    found = {record.target: record for record in load(out).records_of(YourAppResult)}
    assert set(found) == set(WAYS.split(",")), output
    for name, record in found.items():
        assert record.verified and record.ok, (name, record.problem, output)
        assert record.rps and record.rps > 0 and record.errors == 0, (name, record.status_codes)
    assert "differs from the development server" not in output, output


def test_a_flask_wtf_form_s_csrf_token_is_masked_whole(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Two tokens asked in the same second share their middle part (the time they were signed); that part was
    kept as a literal, and a way asked a second later "differed at byte 244: expected b'Wg.'"."""
    status, output = run_case("csrf_form", tmp_path, capsys)
    assert status == 0, output
    assert_every_way_verified_and_loaded(tmp_path, output)
    found = {record.target: record for record in load(tmp_path).records_of(YourAppResult)}
    # The form, the form again after a POST without its token, and the redirect: each with its own status.
    assert set(found["gunicorn-threads"].status_codes) == {"200", "302"}, found["gunicorn-threads"].status_codes


def test_a_flaskenv_with_flask_debug_is_read_by_no_server(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`flask run` read the .flaskenv (python-dotenv is among the app's requirements) and pretty-printed its JSON in
    debug mode; no way reads it, and the reference no longer does: the record says how it ran, debug off. The
    absolute URLs of its index and its redirect carry the host each server was asked on, marked."""
    status, output = run_case("flaskenv_json", tmp_path, capsys)
    assert status == 0, output
    assert_every_way_verified_and_loaded(tmp_path, output)
    reference = load(tmp_path).metadata.extra["reference"]
    assert reference["debug"] is False and reference["setups"] == 2, reference
    assert "no .flaskenv or .env read" in reference["how"] and "run_simple" in reference["command"], reference
    assert "the app is in debug mode" not in output, output
    page = (tmp_path / "results.md").read_text()
    assert "- The reference: Werkzeug's development server" in page and "The app's debug mode: off." in page, page
    assert "- The servers' versions every way ran: " in page and "gunicorn 27.0.1" in page, page


def test_what_the_set_up_writes_is_masked_across_two_set_ups(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """SETUP writes a time, a random id and a salt in each fresh container: each way's differ from the reference's,
    which ran twice, each time after its own set-up, and masked what its two set-ups wrote differently."""
    status, output = run_case("setup_state", tmp_path, capsys, "--setup", "python seed.py")
    assert status == 0, output
    assert_every_way_verified_and_loaded(tmp_path, output)
    assert load(tmp_path).metadata.extra["setup"] == "python seed.py"


def test_an_app_on_postgres_gets_the_database_s_cpu_and_statements_per_request(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An ORM app whose URL a SERVICES= file gives, its table made by its set-up: Postgres's own CPU and the
    statements it counted beside the app's CPU, per request type alone and per request under load, and the page
    says which binds it. Each page is a SELECT in a transaction: BEGIN, SELECT, ROLLBACK (and SQLAlchemy's few
    questions on each new connection of its pool)."""
    folder = CASES / "postgres_orm"
    status, output = run_case("postgres_orm", tmp_path, capsys, "--services", str(folder / "services.yml"),
                              "--setup", "python -c 'import app; app.migrate()'")  # fmt: skip
    assert status == 0, output
    assert_every_way_verified_and_loaded(tmp_path, output)
    loaded = load(tmp_path)
    assert loaded.metadata.extra["database"] == {"service": "postgres", "counts_statements": True}
    for label in ("GET /notes", "GET /notes/2"):
        cost = loaded.metadata.extra["request_costs"][label]
        assert 2.9 <= cost["db_statements"] <= 3.6, cost
        assert cost["db_cpu_ms"] > 0, cost
    for record in loaded.records_of(YourAppResult):
        assert record.db_cpu_ms_per_request and record.db_cpu_ms_per_request > 0, record
        assert record.db_statements_per_request and 2.9 <= record.db_statements_per_request <= 3.6, record
    page = (tmp_path / "results.md").read_text()
    assert "## Python or the database, at 2 clients" in page and "Postgres CPU ms/request" in page, page
