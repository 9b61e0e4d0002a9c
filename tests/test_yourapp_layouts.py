"""make yourapp on apps laid out as readers' are, each in its own folder under tests/yourapp_layouts/: a src/ layout
project installed as one (`pip install -e /app`), Flask 2.1 (no `flask --app`) from a hashed lock whose older
gunicorn replaces the servers', a set-up that fails on an import (named by the ImportError, not by Flask's "No such
command" after it), and a service that never turns healthy (named within its healthcheck's time). Its stacks publish
on ports of their own (3192, 8192), beside tests/test_yourapp.py's (3190) and tests/test_yourapp_cases.py's (3191).

What the tests without Docker check piece by piece (tests/test_yourapp_requirements.py), these check end to end."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from bench.modes.yourapp import run as yourapp
from bench.modes.yourapp.record import YourAppResult
from bench.results.store import load

pytestmark = pytest.mark.docker

LAYOUTS = Path(__file__).parent / "yourapp_layouts"
PORTS = ["--port", "3192", "--nginx-port", "8192"]


def run_layout(case: str, out: Path, capsys: pytest.CaptureFixture[str], *options: str) -> tuple[int, str]:
    folder = LAYOUTS / case
    status = yourapp.main(["--app", str(folder), "--requests", str(folder / "requests.txt"), "--ways",
                           "gunicorn-threads", "--clients", "2", "--seconds", "2", "--out", str(out), *PORTS,
                           *options])  # fmt: skip
    captured = capsys.readouterr()
    return status, captured.out + captured.err


def served(out: Path, output: str) -> YourAppResult:
    found = {record.target: record for record in load(out).records_of(YourAppResult)}
    record = found.get("gunicorn-threads")
    assert record is not None and record.verified and record.ok and record.rps, (record, output)
    return record


def did_not_start(output: str) -> str:
    said = [line.strip() for line in output.splitlines() if line.strip().startswith("devserver did not start: ")]
    assert len(said) == 1, output
    assert "Traceback" not in output, output
    return said[0]


def test_a_src_layout_project_is_installed_and_served(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Its page answers 200 only when imported from /app/src and installed (importlib.metadata knows it)."""
    status, output = run_layout("src_project", tmp_path, capsys, "--callable", "layoutapp:create_app()")
    assert status == 0, output
    served(tmp_path, output)
    servers = load(tmp_path).metadata.extra["servers"]
    assert servers["replaced"] == {} and servers["ran"]["gunicorn"] == servers["pinned"]["gunicorn"], servers


def test_flask_2_1_from_a_hashed_lock_is_set_up_and_served(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Flask 2.1 and Werkzeug 2.1 do not import on Python 3.14 (pkgutil.get_loader, ast.Str are gone): 3.13, as
    PYTHON_VERSION= is for. Its SETUP is `flask init-db`, which Flask 2.1 finds through FLASK_APP."""
    status, output = run_layout("flask21_lock", tmp_path, capsys, "--python", "3.13", "--setup", "flask init-db")
    assert status == 0, output
    # Named before the build, in one line; the version that ran, in the record.
    assert re.search(r"^the app's requirements replace the servers' pins: gunicorn==23\.0\.0 \(the servers' [\d.]+\);"
                     r" every way runs the app's$", output, re.MULTILINE), output  # fmt: skip
    served(tmp_path, output)
    servers = load(tmp_path).metadata.extra["servers"]
    assert servers["ran"]["gunicorn"] == "23.0.0" and "gunicorn" in servers["replaced"], servers
    assert servers["ran"]["click"] == servers["pinned"]["click"], servers  # the lock's click is the servers' own


def test_a_set_up_that_fails_is_named_by_its_import_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status, output = run_layout("setup_cause", tmp_path, capsys, "--setup", "flask db upgrade")
    assert status == 1
    # Flask's own last line would be "Error: No such command 'db'."
    assert did_not_start(output) == "devserver did not start: ModuleNotFoundError: No module named 'psycopg'", output


def test_a_service_that_turns_unhealthy_is_named_with_its_log(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    services = LAYOUTS / "never_healthy" / "services-unhealthy.yml"
    status, output = run_layout("never_healthy", tmp_path, capsys, "--services", str(services))
    assert status == 1
    line = did_not_start(output)
    found = re.fullmatch(r"devserver did not start: service stand_in_db is unhealthy after (\d+) s: "
                         r"FATAL:  the stand-in database refuses every connection", line)  # fmt: skip
    # Its healthcheck's 5 s (2 s of start period, 3 tries a second apart) and the grace, not a generic wait.
    assert found and int(found[1]) <= 10, line


def test_a_service_whose_healthcheck_hangs_is_named_at_its_own_deadline(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    services = LAYOUTS / "never_healthy" / "services-slow-probe.yml"
    status, output = run_layout("never_healthy", tmp_path, capsys, "--services", str(services))
    assert status == 1
    line = did_not_start(output)
    expected = (
        r"devserver did not start: service stand_in_db is not healthy after (\d+) s \(its healthcheck's 3 s;"
        r" starting\): LOG:  the stand-in database is still recovering"
    )
    found = re.fullmatch(expected, line)
    assert found and int(found[1]) <= 10, line
