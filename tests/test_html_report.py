"""index.html, the page a person opens: rendered with the rest of a result set, sorted by real clicks in headless
Chromium (Debian's chromium and chromium-driver; .ci/run installs them), and loading nothing from anywhere."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import subprocess
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.command import Command

from bench.containers.images import build_on_first_use
from bench.sets import render
from tests.conftest import wait_for_container

CHROMIUM, CHROMEDRIVER = shutil.which("chromium"), shutil.which("chromedriver")
# Where they are not on this machine, both run in a container of their own (tests/Dockerfile-chromium).
CHROMIUM_IMAGE, CHROMIUM_DOCKERFILE = "flask-playground/chromium", "tests/Dockerfile-chromium"
DRIVER_PORT = 9515


def docker_answers() -> bool:
    if shutil.which("docker") is None:
        return False
    try:
        return subprocess.run(["docker", "info"], capture_output=True, timeout=20).returncode == 0
    except subprocess.TimeoutExpired:
        return False


needs_chromium = pytest.mark.skipif(
    not (CHROMIUM and CHROMEDRIVER) and not docker_answers(),
    reason="no chromium or chromedriver here, and no Docker engine answers to run them in their container",
)

METADATA = {
    "date": "2026-11-23T05:30:22+00:00", "git_commit": "8694934", "cpu_count": 2, "kernel": "6.18.44-fc-v782",
    "docker_version": "20.10.24+dfsg1", "compose_version": "2.29.7",
    "command": "python -m bench.modes.bench --client auto --out results/fixture --cold-build", "mode": "bench",
    "packages": {"flask-playground/gunicorn": ["Flask==3.1.3", "gunicorn==27.0.1"]},
}  # fmt: skip


def record(scenario: str, target: str, server: str, mode: str, workers: int, per_worker: int | None, **measured):
    threads, cores = (per_worker, None) if mode == "sync" else (None, per_worker)
    return {
        "scenario": scenario, "target": target, "server": server, "mode": mode, "workers": workers,
        "threads_per_worker": threads, "gevent_cores": cores, "n": 2000, "c": 200, "delay": 1.0, "client": "host",
        "ceiling_rps": 181.82, "ceiling_naive_rps": 200.0, "verified": True, "problem": None,
        "command": f"ab -r -n 2000 -c 200 http://127.0.0.1:3000/?delay=1 <{target}>", "threads_idle": 2,
        "threads_peak": 12, "rss_mb_peak": 56.1, "cpu_seconds": 2.52, "cpu_seconds_others": {"slow_api": 0.28},
        "machine_busy": 0.29, "seconds": 11.9, "p50_ms": 1056.0, "p99_ms": 1190.0, "failed": 0, "non2xx": 0,
        "ok": True, **measured,
    }  # fmt: skip


# Trimmed from results/2026-11-23-bench: four targets, each with its own throughput and "at once". The loads of
# 10 requests show no CPU per request (–).
RECORDS = [
    record("sync-devserver", "devserver-single", "flask-devserver", "sync", 1, 1, n=10, c=5, ceiling_rps=1.0,
           ceiling_naive_rps=1.0, rps=0.99, efficiency=0.99, p50_ms=5069.0, p99_ms=5075.0),
    record("bonus-psycopg2-gevent", "psycopg2-patched", "gunicorn", "gevent", 1, 1000, n=10, c=5, ceiling_rps=3.33,
           ceiling_naive_rps=5.0, rps=3.19, efficiency=0.96, p50_ms=1064.0, p99_ms=1068.0),
    record("sync-gunicorn", "gunicorn-sync", "gunicorn", "sync", 4, 50, rps=170.8, efficiency=0.94, p99_ms=1291.0),
    # Failed, with a throughput higher than every other: it must still sort last, never as 999.9.
    record("async-gevent-pywsgi", "gevent-pywsgi", "gevent-pywsgi", "gevent", 1, None, rps=999.9, efficiency=5.5,
           cpu_seconds=1.0, failed=3, ok=False,
           problem="ab counted 3 failures (3 receive) and 0 non-2xx answers <b>in</b> 2000"),
]  # fmt: skip


def write_results(folder: Path, records: list[dict], **metadata: object) -> Path:
    folder.mkdir(exist_ok=True)
    (folder / "results.json").write_text(json.dumps({"metadata": METADATA | metadata, "results": records}))
    render(folder)
    return folder / "index.html"


def test_page_is_one_file_with_the_charts_commands_and_escaped_cells(tmp_path: Path) -> None:
    page = write_results(tmp_path, RECORDS).read_text()
    assert page.count('src="data:image/png;base64,') == 2  # throughput and latency, inside the page
    assert not re.search(r"""(?:src|href)\s*=\s*(?!["']?(?:data:|#))""", page), "a resource outside the page"
    assert "<b>in</b>" not in page and "&lt;b&gt;in&lt;/b&gt;" in page
    assert "<strong>FAILED</strong>: ab counted 3 failures" in page
    for fixture in RECORDS:
        assert f"<code>{fixture['command'].replace('<', '&lt;').replace('>', '&gt;')}</code>" in page
    for fact in ("8694934", "Linux 6.18.44-fc-v782", "20.10.24+dfsg1", "2.29.7", METADATA["command"]):
        assert fact in page


def test_page_names_the_sets_own_tool_and_ceiling(tmp_path: Path) -> None:
    records = [fixture | {"loadgen": "hey", "keepalive": True} for fixture in RECORDS]
    page = write_results(tmp_path, records).read_text()
    assert "hey (keep-alive" in page and "under hey: hey opens its c connections at once" in page
    assert "under ab" not in page  # ab's solo first request is not hey's ceiling
    assert "# Benchmark results: hey (keep-alive" in (tmp_path / "results.md").read_text()
    wrk_records = [fixture | {"loadgen": "wrk", "keepalive": True} for fixture in RECORDS]
    write_results(tmp_path, wrk_records)
    assert "| 10 s / 200 / 1 s |" in (tmp_path / "results.md").read_text()  # wrk runs for a time, not n


@pytest.mark.parametrize("mode", ["sweep", "overload", "repeats"])
def test_page_for_every_mode_even_one_it_does_not_know(tmp_path: Path, mode: str) -> None:
    records = [fixture | {"survived": True} for fixture in RECORDS]
    page = write_results(tmp_path, records, mode=mode).read_text()
    assert page.count('src="data:image/png;base64,') == 1  # sweep.png
    assert page.count("<tr") == (len(RECORDS) + 1) * (2 if mode == "overload" else 1)  # and the summary


def driver_ready(url: str) -> bool:
    """Whether chromedriver at `url` takes sessions (its /status)."""
    try:
        with urllib.request.urlopen(f"{url}/status", timeout=2) as status:
            return bool(json.load(status)["value"]["ready"])
    except (OSError, ValueError, KeyError):
        return False


@contextlib.contextmanager
def driver_in_container(pages: Path) -> Iterator[str]:
    """chromedriver and Chromium in their container, the folder of the pages mounted at the same path (they are
    opened as files): the driver's URL, on 127.0.0.1. The container is removed after."""
    image = build_on_first_use(CHROMIUM_IMAGE, CHROMIUM_DOCKERFILE, "tests")
    publish, mount = f"127.0.0.1::{DRIVER_PORT}", f"{pages}:{pages}:ro"
    # As this machine's user: pytest's folders are its own (0700); HOME: Chromium writes its profile there.
    user = ["--user", f"{os.getuid()}:{os.getgid()}", "--env", "HOME=/tmp"]
    run = ["docker", "run", "--detach", "--rm", *user, "--publish", publish, "--volume", mount, image]
    container = subprocess.run(run, capture_output=True, text=True, check=True).stdout.strip()
    try:
        port = subprocess.run(["docker", "port", container, str(DRIVER_PORT)], capture_output=True, text=True)
        url = f"http://{port.stdout.split()[0]}"
        wait_for_container(container, lambda: driver_ready(url), f"chromedriver in {image}")
        yield url
    finally:
        subprocess.run(["docker", "rm", "--force", container], capture_output=True)


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[webdriver.Remote]:
    """Headless Chromium: this machine's, or in its container. Every test's pages are under pytest's base folder."""
    options = webdriver.ChromeOptions()
    # --no-sandbox: CI runs as root, where Chromium's sandbox refuses to start (and a container is one already);
    # --disable-dev-shm-usage: a container's /dev/shm is 64 MB.
    arguments = (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--window-size=1400,1000",
    )
    for argument in arguments:
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"performance": "ALL"})  # every request the page makes
    if CHROMIUM and CHROMEDRIVER:
        options.binary_location = CHROMIUM
        driver = webdriver.Chrome(options=options, service=Service(CHROMEDRIVER))
        yield driver
        driver.quit()
        return
    with driver_in_container(tmp_path_factory.getbasetemp()) as url:
        driver = webdriver.Remote(command_executor=url, options=options)
        yield driver
        driver.quit()


def performance_log(driver: webdriver.Remote) -> list[dict]:
    """What the page asked the network for (the driver's "performance" log), from either driver."""
    return driver.execute(Command.GET_LOG, {"type": "performance"})["value"]


def targets(driver: webdriver.Remote) -> list[str]:
    return driver.execute_script(
        "return [...document.querySelectorAll('table.sortable tbody tr')].map((row) => row.cells[1].textContent)"
    )


def click_header(driver: webdriver.Remote, column: str) -> str:
    header = driver.find_element(By.XPATH, f"//table[@class='sortable']//th[button[text()='{column}']]")
    header.find_element(By.TAG_NAME, "button").click()
    return header.get_attribute("aria-sort")


@needs_chromium
def test_clicking_a_header_sorts_numerically_failed_rows_last(tmp_path: Path, browser: webdriver.Remote) -> None:
    browser.get(write_results(tmp_path, RECORDS).as_uri())
    assert targets(browser) == ["devserver-single", "psycopg2-patched", "gunicorn-sync", "gevent-pywsgi"]
    # 0.99 < 3.19 < 170.8 as numbers (as text "170.8" < "3.19"); the FAILED row last both ways.
    assert click_header(browser, "requests/s") == "ascending"
    assert targets(browser) == ["devserver-single", "psycopg2-patched", "gunicorn-sync", "gevent-pywsgi"]
    assert click_header(browser, "requests/s") == "descending"
    assert targets(browser) == ["gunicorn-sync", "psycopg2-patched", "devserver-single", "gevent-pywsgi"]
    # 0.50 (the failed row, measured all the same) < 1.26 ms; the two "–" last both ways.
    assert click_header(browser, "app CPU ms / request") == "ascending"
    assert targets(browser) == ["gevent-pywsgi", "gunicorn-sync", "psycopg2-patched", "devserver-single"]
    assert click_header(browser, "app CPU ms / request") == "descending"
    assert targets(browser) == ["gunicorn-sync", "gevent-pywsgi", "psycopg2-patched", "devserver-single"]
    # 1 x 1 threads, 4 x 50, 1 x 1000 greenlets, then unbounded: what the server holds, not the text's order.
    assert click_header(browser, "at once") == "ascending"
    assert targets(browser) == ["devserver-single", "gunicorn-sync", "psycopg2-patched", "gevent-pywsgi"]
    assert click_header(browser, "target") == "ascending"
    assert targets(browser) == ["devserver-single", "gevent-pywsgi", "gunicorn-sync", "psycopg2-patched"]


@needs_chromium
def test_page_loads_nothing_but_itself(tmp_path: Path, browser: webdriver.Remote) -> None:
    performance_log(browser)  # forget what earlier pages asked for
    page = write_results(tmp_path, RECORDS).as_uri()
    browser.get(page)
    assert len(browser.find_elements(By.CSS_SELECTOR, "img")) == 2
    assert browser.execute_script("return [...document.images].every((image) => image.naturalWidth > 0)")
    events = [json.loads(entry["message"])["message"] for entry in performance_log(browser)]
    sent = [event["params"]["request"]["url"] for event in events if event["method"] == "Network.requestWillBeSent"]
    assert {url for url in sent if not url.startswith("data:")} == {page}


def test_slowclients_set_gets_its_page(tmp_path: Path) -> None:
    committed = Path(__file__).parent.parent / "results" / "2026-11-23-slowclients" / "results.json"
    (tmp_path / "results.json").write_text(committed.read_text())
    render(tmp_path)
    page = (tmp_path / "index.html").read_text()
    assert "Slow clients" in page and "<strong>25</strong> (5.0 s)" in page  # gunicorn-sync, idle connections
    assert page.count('<table class="sortable">') == 2  # summary and levels
    assert (tmp_path / "results.md").read_text() == committed.with_name("results.md").read_text()


RESULTS = Path(__file__).parent.parent / "results"


def render_committed(tmp_path: Path, result_set: str) -> Path:
    """A committed set's page rendered again from its results.json alone, as `python -m bench.render` does."""
    folder = tmp_path / result_set
    folder.mkdir()
    (folder / "results.json").write_text((RESULTS / result_set / "results.json").read_text())
    render(folder)
    return folder / "index.html"


def test_map_and_labs_sets_get_their_pages(tmp_path: Path) -> None:
    workload_map = render_committed(tmp_path, "2026-11-23-map").read_text()
    assert "<h1>The workload map</h1>" in workload_map
    assert workload_map.count('src="data:image/png;base64,') == 2  # map_winners and map_throughput
    assert workload_map.count('<table class="sortable">') == 4  # winners, the flip, gevent vs threads, every cell
    labs = render_committed(tmp_path, "2026-11-23-labs").read_text()
    assert "<h1>Failure labs</h1>" in labs and "<h2>cpu-starvation</h2>" in labs
    assert labs.count('<table class="sortable">') == 5  # one per lab
    assert "<code>docker compose -f labs/late-patch.yml up --build</code>" in labs


def column(driver: webdriver.Remote, table: int, index: int) -> list[str | None]:
    return driver.execute_script(
        "const table = document.querySelectorAll('table')[arguments[0]];"
        "return [...table.tBodies[0].rows].map((row) => row.cells[arguments[1]].dataset.sort ?? null)",
        table,
        index,
    )


def in_order(values: list[str | None], numeric: bool, ascending: bool) -> bool:
    """The values with a sort key first, in order; the ones without last."""
    known = [value for value in values if value is not None]
    if values[: len(known)] != known:
        return False
    if not numeric:  # the page compares text as the browser's locale does: only check the direction of numbers
        return True
    numbers = [float(value) for value in known]
    return numbers == sorted(numbers, reverse=not ascending)


@needs_chromium
@pytest.mark.parametrize(
    "result_set", ["2026-11-23-bench", "2026-11-23-overload", "2026-11-23-slowclients", "2026-11-23-latency",
                   "2026-11-23-map", "2026-11-23-labs"],
)  # fmt: skip
def test_every_table_on_every_kind_of_page_sorts(tmp_path: Path, browser: webdriver.Remote, result_set: str) -> None:
    browser.get(render_committed(tmp_path, result_set).as_uri())
    tables = browser.find_elements(By.TAG_NAME, "table")
    assert tables and all(table.get_attribute("class") == "sortable" for table in tables)
    for number, table in enumerate(tables):
        for index, header in enumerate(table.find_elements(By.CSS_SELECTOR, "thead th")):
            numeric = "number" in (header.get_attribute("class") or "")
            before = column(browser, number, index)
            button = header.find_element(By.TAG_NAME, "button")
            browser.execute_script("arguments[0].scrollIntoView({block: 'center', inline: 'center'})", button)
            button.click()
            assert header.get_attribute("aria-sort") == "ascending"
            ascending = column(browser, number, index)
            assert sorted(ascending, key=str) == sorted(before, key=str)  # the same rows, reordered
            assert in_order(ascending, numeric, ascending=True), (result_set, number, header.text, ascending)
            button.click()
            assert header.get_attribute("aria-sort") == "descending"
            assert in_order(column(browser, number, index), numeric, ascending=False)
