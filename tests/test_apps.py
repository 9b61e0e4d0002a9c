"""Both apps and slow_api without Docker: validation and error paths against a real slow_api process."""

from __future__ import annotations

import importlib.util
import sys
import time
from types import ModuleType

import pytest
import requests

from bench.containers.scenarios import ROOT
from tests.conftest import SlowApiProcess, free_port

BAD_DELAYS = ["abc", "", "-1", "30.5", "nan", "inf", "-inf", "1e400", "0x10", "1,5"]
BAD_CPUS = ["abc", "", "-1", "1001", "1.5", "1e3", "+5", "nan", "\u0661"]  # the last: an Arabic-Indic one
APP_FOLDERS = ("flask_app", "quart_app", "psycopg2", "psycopg3")


def load_app(folder: str, monkeypatch: pytest.MonkeyPatch, **environment: str) -> ModuleType:
    """Import folder/app.py afresh with these environment variables, as its container would."""
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    monkeypatch.syspath_prepend(str(ROOT / folder))  # its own modules, as in its image: cpu_work
    monkeypatch.delitem(sys.modules, "cpu_work", raising=False)
    spec = importlib.util.spec_from_file_location(f"{folder}_app", ROOT / folder / "app.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, module)
    spec.loader.exec_module(module)
    return module


def assert_one_line_error(body: str) -> None:
    assert body.endswith("\n") and body.count("\n") == 1, body
    assert "Traceback" not in body and "<" not in body, body


def assert_rejects_bad_cpu(client, cpu: str) -> None:
    response = client.get("/", query_string={"delay": "0", "cpu": cpu})
    assert response.status_code == 400
    assert "cpu must be a whole number of work units between 0 and 1000" in response.text
    assert_one_line_error(response.text)


class TestSlowApi:
    def test_answers_after_the_delay(self, slow_api: SlowApiProcess) -> None:
        started = time.monotonic()
        response = requests.get(slow_api.url, params={"delay": 0.3}, timeout=5)
        assert response.status_code == 200
        assert response.text == "slow api response"
        assert time.monotonic() - started >= 0.3

    @pytest.mark.parametrize("delay", BAD_DELAYS)
    def test_rejects_bad_delay(self, slow_api: SlowApiProcess, delay: str) -> None:
        response = requests.get(slow_api.url, params={"delay": delay}, timeout=5)
        assert response.status_code == 400
        assert "delay must be" in response.text
        assert_one_line_error(response.text)


class TestFlaskApp:
    @pytest.fixture(params=["per-request", "session"])
    def client(self, request: pytest.FixtureRequest, slow_api: SlowApiProcess, monkeypatch: pytest.MonkeyPatch):
        environment = {"SLOW_API_URL": slow_api.url, "SLOW_API_TIMEOUT_MARGIN": "0.5", "SLOW_API_CLIENT": request.param}
        return load_app("flask_app", monkeypatch, **environment).app.test_client()

    def test_unknown_client_mode_stops_at_start(self, monkeypatch: pytest.MonkeyPatch) -> None:
        with pytest.raises(SystemExit, match="SLOW_API_CLIENT must be"):
            load_app("flask_app", monkeypatch, SLOW_API_CLIENT="pooled")

    def test_client_none_waits_in_place_without_slow_api(
        self, slow_api: SlowApiProcess, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        slow_api.stop()  # nothing to call: the app must not need it
        app = load_app("flask_app", monkeypatch, SLOW_API_URL=slow_api.url, SLOW_API_CLIENT="none").app
        started = time.monotonic()
        response = app.test_client().get("/?delay=0.3")
        assert (response.status_code, response.text) == (200, "Hi there! slow api response")
        assert time.monotonic() - started >= 0.3

    def test_answers_with_slow_api_text(self, client) -> None:
        started = time.monotonic()
        response = client.get("/?delay=0.2")
        assert response.status_code == 200
        assert response.text == "Hi there! slow api response"
        assert time.monotonic() - started >= 0.2

    def test_default_delay_is_one_second(self, client) -> None:
        started = time.monotonic()
        assert client.get("/").status_code == 200
        assert time.monotonic() - started >= 1.0

    @pytest.mark.parametrize("delay", BAD_DELAYS)
    def test_rejects_bad_delay(self, client, delay: str) -> None:
        response = client.get("/", query_string={"delay": delay})
        assert response.status_code == 400
        assert response.mimetype == "text/plain"
        assert "delay must be" in response.text
        assert_one_line_error(response.text)

    @pytest.mark.parametrize("cpu", BAD_CPUS)
    def test_rejects_bad_cpu(self, client, cpu: str) -> None:
        assert_rejects_bad_cpu(client, cpu)

    @pytest.mark.timing
    def test_more_cpu_units_take_more_cpu_time(self, client) -> None:
        """?cpu= is work done in this process: its CPU time grows with the units (wide margins)."""
        from cpu_work import ms_per_unit

        # The least of four: a unit measured while another process shares the core can count up to twice its CPU time
        # (seen: 3.4 ms, then 1.5 ms a unit for the 200 below), which would ask too much of the 200.
        unit_ms = min(ms_per_unit(25) for _ in range(4))
        spent = {}
        for units in (0, 200):
            started = time.process_time()
            response = client.get("/", query_string={"delay": "0", "cpu": str(units)})
            spent[units] = (time.process_time() - started) * 1000
            assert (response.status_code, response.text) == (200, "Hi there! slow api response")
        # 200 units: about 200 x unit_ms more than none; at least half of that, whatever the machine.
        assert spent[200] - spent[0] >= 0.5 * 200 * unit_ms, (spent, unit_ms)

    def test_query_that_is_not_utf8_is_a_400(self, client) -> None:
        # Raw bytes, as some servers pass them on undecoded (gevent's pywsgi, uWSGI).
        response = client.get("/", environ_overrides={"QUERY_STRING": "delay=\xff\xfe"})
        assert response.status_code == 400
        assert_one_line_error(response.text)

    def test_unknown_path_is_a_plain_404(self, client) -> None:
        response = client.get("/nowhere")
        assert response.status_code == 404
        assert_one_line_error(response.text)

    def test_slow_api_stopped_gives_502(self, client, slow_api: SlowApiProcess) -> None:
        slow_api.stop()
        started = time.monotonic()
        response = client.get("/?delay=0")
        assert response.status_code == 502
        assert response.text == "slow_api is unreachable\n"
        assert time.monotonic() - started < 5

    def test_slow_api_too_slow_gives_504(self, client, slow_api: SlowApiProcess) -> None:
        slow_api.freeze()  # accepts connections (the kernel does) but never answers
        started = time.monotonic()
        response = client.get("/?delay=0.1")
        elapsed = time.monotonic() - started
        slow_api.thaw()
        assert response.status_code == 504
        assert "did not answer within 0.6 seconds" in response.text
        assert_one_line_error(response.text)
        assert 0.5 <= elapsed < 5


class TestPsycopg2App:
    """Without Postgres: validation comes first, and a missing database is a clear 503."""

    @pytest.fixture(params=["pool", "per-request"])
    def client(self, request: pytest.FixtureRequest, slow_api: SlowApiProcess, monkeypatch: pytest.MonkeyPatch):
        nowhere = f"postgresql://postgres:playground@127.0.0.1:{free_port()}/postgres"
        environment = {"SLOW_API_URL": slow_api.url, "DATABASE_URL": nowhere, "POSTGRES_CONNECTIONS": request.param}
        return load_app("psycopg2", monkeypatch, **environment).app.test_client()

    def test_unknown_connection_mode_stops_at_start(self, monkeypatch: pytest.MonkeyPatch) -> None:
        with pytest.raises(SystemExit, match="POSTGRES_CONNECTIONS must be"):
            load_app("psycopg2", monkeypatch, DATABASE_URL="postgresql://postgres@nowhere/", POSTGRES_CONNECTIONS="x")

    @pytest.mark.parametrize("delay", BAD_DELAYS)
    def test_rejects_bad_delay(self, client, delay: str) -> None:
        response = client.get("/", query_string={"delay": delay})
        assert response.status_code == 400
        assert_one_line_error(response.text)

    @pytest.mark.parametrize("cpu", BAD_CPUS)
    def test_rejects_bad_cpu(self, client, cpu: str) -> None:
        assert_rejects_bad_cpu(client, cpu)

    def test_database_down_gives_503(self, client) -> None:
        response = client.get("/?delay=0.2")
        assert response.status_code == 503
        assert response.text == "postgres is unavailable\n"


def test_every_app_does_the_same_cpu_work() -> None:
    """Each app folder is its own build context, so each has a copy of cpu_work.py: one unit must be one unit
    everywhere, or results would not compare across servers."""
    copies = {folder: (ROOT / folder / "cpu_work.py").read_text() for folder in APP_FOLDERS}
    assert len(set(copies.values())) == 1, f"cpu_work.py differs between {', '.join(copies)}: copy flask_app's"
