"""The bookstore (bookstore.yml) end to end: its six servers on a real Postgres with a small generated data set.

One scenario for the whole module, at BOOKSTORE_SCALE=2100 authors (about 21,000 books; generated in a second or
two), in its own volume, removed at the end. Every expected answer is computed here from the generator's formulas
(bookstore/db/10-bookstore.sh), never copied from a response.
"""

from __future__ import annotations

import random
import re
import subprocess
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from datetime import UTC, date, datetime, timedelta
from typing import Any

import pytest
import requests
import yaml

from bench.containers import postgres
from bench.containers.compose import RunningScenario, compose_command
from bench.containers.scenarios import ROOT, Target, interpolate
from tests.cpu_share import PremiseNotMet, premise_checked
from tests.hostile_framing import BOOKSTORE_APP, assert_framing_answered

pytestmark = pytest.mark.docker

SCALE = 2100  # a multiple of 21: every book count 0..20 appears 100 times
COMPOSE_FILE = ROOT / "bookstore.yml"
CODES = "USGBFRDEITESNLSEPLBRJPCNINCAAUMXZAKRARNG"
GENRES = ["Adventure", "Biography", "Children", "Classics", "Comics", "Crime", "Drama", "Fantasy", "History",
          "Horror", "Humor", "Mystery", "Philosophy", "Poetry", "Romance", "Science", "Science Fiction", "Thriller",
          "Travel", "Western"]  # fmt: skip
POOL_503 = "database pool: no free connection within"
# Seconds: the stack's POSTGRES_STATEMENT_TIMEOUT here, so that a test waits it out in seconds (the default is
# 30 s); every statement at this SCALE takes milliseconds, 300 clients at once included.
STATEMENT_TIMEOUT = 8


def bookstore_targets() -> list[Target]:
    document = yaml.safe_load(COMPOSE_FILE.read_text())
    return [
        Target(scenario="bookstore", **{key: interpolate(value, {}) for key, value in entry.items()})
        for entry in document["x-targets"]
    ]


EVERY_TARGET = bookstore_targets()
TARGETS = [target for target in EVERY_TARGET if target.rung is None]  # the ways of serving
RUNGS = [target for target in EVERY_TARGET if target.rung is not None]  # the ladder (bookstore/ladder.py)
TARGET_PARAMS = [pytest.param(target, id=target.name) for target in TARGETS]
EVERY_PARAM = [pytest.param(target, id=target.name) for target in EVERY_TARGET]
HEALTH_CONNECTIONS = sum(target.workers for target in EVERY_TARGET)  # GET /health's own: one per process
TOTAL_POOL = sum(target.db_pool for target in EVERY_TARGET)


# The generator's formulas (bookstore/db/10-bookstore.sh), in Python.
def book_ids(author_id: int) -> list[int]:
    return [(author_id - 1) * 20 + k + 1 for k in range(author_id % 21)]


def genre_names(book_id: int) -> list[str]:
    return sorted(GENRES[(book_id + offset) % 20] for offset in (0, 7, 13)[: 1 + book_id % 3])


def expected_author(i: int) -> dict[str, Any]:
    books = [
        {
            "id": book,
            "title": f"Book {book - (i - 1) * 20} by author {i}",
            "published_on": (date(1950, 1, 1) + timedelta(days=book * 17 % 25000)).isoformat(),
            "genres": genre_names(book),
        }
        for book in book_ids(i)
    ]
    return {
        "id": i,
        "name": f"Author {i}",
        "country_code": CODES[i % 20 * 2 : i % 20 * 2 + 2],
        "date_of_birth": (date(1900, 1, 1) + timedelta(days=i * 37 % 36500)).isoformat(),
        "biography": f"Biography of author {i}.",
        "created_at": (datetime(2020, 1, 1, tzinfo=UTC) + timedelta(seconds=i)).isoformat(),
        "books": books,
        "genres": sorted({name for book in books for name in book["genres"]}),
    }


class Bookstore(RunningScenario):
    """bookstore.yml as a RunningScenario, named by its file: the scenario registry may not list it."""

    def __init__(self) -> None:
        settings = {
            "BOOKSTORE_SCALE": str(SCALE),
            "POSTGRES_STATEMENT_TIMEOUT": str(STATEMENT_TIMEOUT),
            "COMPOSE_PROFILES": "ladder",  # the ladder's rungs too: each must serve the same JSON
        }
        # A cold build of the six images takes long, the PyPy one with gevent from source.
        super().__init__("bookstore", ready_timeout=600, environment=settings, files=(COMPOSE_FILE,))

    def psql(self, sql: str) -> str:
        result = self.compose("exec", "-T", "postgres", "psql", "-U", "postgres", "-d", "bookstore", "-At", "-c", sql)
        return result.stdout.strip()


@pytest.fixture(scope="module")
def bookstore() -> Iterator[Bookstore]:
    with Bookstore() as running:
        yield running


def url(target: Target, path: str) -> str:
    return f"http://127.0.0.1:{target.port}{path}"


def new_author(name: str) -> dict[str, str]:
    return {"name": name, "country_code": "FR", "date_of_birth": "1970-05-17", "biography": "Wrote tests."}


def test_the_generator_makes_the_formulas_rows(bookstore: Bookstore) -> None:
    books = sum(i % 21 for i in range(1, SCALE + 1))
    links = sum(1 + book % 3 for i in range(1, SCALE + 1) for book in book_ids(i))
    counts = bookstore.psql(
        f"SELECT (SELECT count(*) FROM authors WHERE id <= {SCALE}), (SELECT count(*) FROM books),"
        " (SELECT count(*) FROM book_genres), (SELECT count(*) FROM genres),"
        f" (SELECT count(*) FROM authors WHERE id > {SCALE} AND created_at < '2021-01-01')"
    )
    assert counts == f"{SCALE}|{books}|{links}|20|0"
    assert books == SCALE * 10  # i % 21 averages 10 over whole cycles of 21


@pytest.mark.parametrize("target", EVERY_PARAM)
def test_an_author_is_exactly_the_formulas(bookstore: Bookstore, target: Target) -> None:
    for author_id in (1, 20, 21, 41, SCALE):  # 1 book, 20, none, 20 (the most), none
        response = requests.get(url(target, f"/author/{author_id}"), timeout=10)
        assert response.status_code == 200, response.text
        assert response.json() == expected_author(author_id)


@pytest.mark.parametrize("target", TARGET_PARAMS)
def test_a_page_of_authors_has_their_book_counts(bookstore: Bookstore, target: Target) -> None:
    response = requests.get(url(target, "/author?limit=30&offset=1000"), timeout=10)
    assert response.status_code == 200, response.text
    page = response.json()
    assert [author["id"] for author in page] == list(range(1001, 1031))
    assert [author["book_count"] for author in page] == [i % 21 for i in range(1001, 1031)]
    assert page[0] == {
        "id": 1001,
        "name": "Author 1001",
        "country_code": expected_author(1001)["country_code"],
        "date_of_birth": expected_author(1001)["date_of_birth"],
        "book_count": 1001 % 21,
    }
    default_page = requests.get(url(target, "/author"), timeout=10).json()
    assert [author["id"] for author in default_page] == list(range(1, 21))


BAD_REQUESTS = [
    # (method, path, body, status, a word the message must hold)
    ("GET", f"/author/{SCALE * 100}", None, 404, "no author"),
    ("GET", "/author/99999999999999999999999", None, 404, "no author"),
    ("GET", "/author/abc", None, 404, "not found"),
    ("GET", "/author/-1", None, 404, "not found"),
    ("GET", "/author?limit=0", None, 400, "limit"),
    ("GET", "/author?limit=101", None, 400, "limit"),
    ("GET", "/author?limit=x", None, 400, "limit"),
    ("GET", "/author?limit=%2B5", None, 400, "limit"),
    ("GET", "/author?offset=-1", None, 400, "offset"),
    ("GET", "/author?offset=10000001", None, 400, "offset"),
    ("POST", "/author", b'{"name": "A", ', 400, "malformed JSON"),
    ("POST", "/author", b"\xff\xfe{", 400, "malformed JSON"),
    ("POST", "/author", b"[" * 20_000, 413, ""),  # over the 16 KiB cap
    ("POST", "/author", b"[" * 10_000, 400, "malformed JSON"),  # under the cap, nested past the parser's depth
    ("POST", "/author", b'{"name": "' + b"x" * 17_000 + b'"}', 413, ""),
]
BAD_AUTHORS = [
    # (body, the field whose message must be there)
    ({**new_author("A"), "name": 5}, "name"),
    ({**new_author("A"), "date_of_birth": "yesterday"}, "date_of_birth"),
    ({**new_author("A"), "country_code": "France"}, "country_code"),
    ({**new_author("A"), "name": "nul\x00byte"}, "name"),
    # Lone UTF-16 surrogates: JSON escapes Python's parser accepts, which UTF-8 (so psycopg) cannot encode.
    ({**new_author("A"), "name": "lone \ud800 high surrogate"}, "name"),
    ({**new_author("A"), "biography": "\udfff"}, "biography"),
    ({**new_author("A"), "country_code": "\udc00\udc00"}, "country_code"),
    # The same as raw bytes (ED A0 80), which json.loads decodes to the same lone surrogate.
    (b'{"name": "raw \xed\xa0\x80", "country_code": "FR", "date_of_birth": "1970-05-17"}', "name"),
    ({key: value for key, value in new_author("A").items() if key != "name"}, "name"),
    ({**new_author("A"), "id": 7}, "id"),  # unknown field
    ([new_author("A")], "_schema"),
]


@pytest.mark.parametrize("target", TARGET_PARAMS)
def test_bad_input_is_a_4xx_with_a_message(bookstore: Bookstore, target: Target) -> None:
    for method, path, body, status, word in BAD_REQUESTS:
        response = requests.request(
            method, url(target, path), data=body, headers={"Content-Type": "application/json"}, timeout=10
        )
        assert response.status_code == status, (path, body and body[:40], response.text[:200])
        if status != 413:  # 413 may come from the server before the app sees the request
            assert word in response.json()["error"], response.text
    for body, field in BAD_AUTHORS:
        if isinstance(body, bytes):
            response = requests.post(
                url(target, "/author"), data=body, headers={"Content-Type": "application/json"}, timeout=10
            )
        else:
            response = requests.post(url(target, "/author"), json=body, timeout=10)
        assert response.status_code == 422, (body, response.text)
        assert field in response.json()["errors"], response.text
        assert "\n" not in response.text.strip(), response.text  # one line, never a traceback


@pytest.mark.parametrize("target", EVERY_PARAM)
def test_a_written_author_reads_back(bookstore: Bookstore, target: Target) -> None:
    name = f"Written through {target.name} {uuid.uuid4()}"
    response = requests.post(url(target, "/author"), json=new_author(name), timeout=10)
    assert response.status_code == 201, response.text
    stored = response.json()
    assert stored["id"] > SCALE
    assert {key: stored[key] for key in new_author(name)} == new_author(name)
    assert stored["books"] == [] and stored["genres"] == []
    again = requests.get(url(target, f"/author/{stored['id']}"), timeout=10)
    assert again.status_code == 200 and again.json() == stored


def concurrently(calls: list[Any], workers: int) -> list[Any]:
    with ThreadPoolExecutor(workers) as pool:
        return list(pool.map(lambda call: call(), calls))


def get_status(address: str, timeout: float = 30) -> tuple[int, str]:
    try:
        response = requests.get(address, timeout=timeout)
    except requests.RequestException as error:
        return 0, type(error).__name__
    return response.status_code, response.text[:200]


@premise_checked
def test_hostile_framing_gets_2xx_4xx_or_a_close_never_a_5xx(bookstore: Bookstore) -> None:
    """tests/hostile_framing.py's requests to every way and every rung, all at once: the one app with a body to read.
    Fourteen servers at once on two cores: beside the other parts a case can go unanswered for its 10 s (a CI run saw
    PyPy's gevent worker and a ladder rung so, both answered alone). Only such a late answer is made again where the
    others had the CPU; a wrong one fails at once."""
    assert_framing_answered({target.name: url(target, "/") for target in EVERY_TARGET}, BOOKSTORE_APP)


def pool_sessions(bookstore: Bookstore, container_address: str) -> int:
    """The request pools' sessions in Postgres from the container at that address, its healthcheck's not counted
    (application_name bookstore-health): one address per container, so every process's pool together."""
    return int(
        bookstore.psql(
            "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'bookstore'"
            f" AND client_addr = '{container_address}'"
        )
    )


def fill_pools(bookstore: Bookstore, target: Target, page: str, rounds: int = 8) -> None:
    """Every connection of the target's pools opened, by rounds of twice as many requests at once as they hold
    (a two-process target's requests split between its processes as the kernel hands them out, so one round may
    leave a pool short). A connect among 300 requests at once can pass libpq's 3 s connect timeout on two shared
    cores (seen with PyPy's cold JIT): a clear 503, but not the pool's limit the test is about; and the abandoned
    connect's session stays in Postgres until its socket is collected (PyPy's garbage collector is not prompt),
    one more session than the pool holds."""
    container_address = bookstore.address(target.service)
    for _ in range(rounds):
        concurrently([lambda: get_status(page, timeout=60)] * 2 * target.db_pool, workers=2 * target.db_pool)
        opened = pool_sessions(bookstore, container_address)
        if opened >= target.db_pool:
            return
    raise PremiseNotMet(
        f"{target.name}: {opened} of its pools' {target.db_pool} connections open after {rounds} rounds"
    )


def pool_wait(text: str) -> float:
    """The seconds a pool's 503 says its request waited for a connection."""
    found = re.search(POOL_503 + r" ([0-9.]+) s", text)
    assert found, text
    return float(found[1])


def timed_status(address: str, timeout: float) -> tuple[int, str, float]:
    started = time.monotonic()
    status, text = get_status(address, timeout=timeout)
    return status, text, time.monotonic() - started


@pytest.mark.parametrize("target", TARGET_PARAMS)
@premise_checked
def test_300_clients_stay_within_the_pools(bookstore: Bookstore, target: Target) -> None:
    sessions = postgres.session_counter(bookstore)
    # The list with the largest offset this data set allows: the slowest statement here, at 300 clients at once.
    address = url(target, f"/author?limit=20&offset={SCALE - 20}")
    fill_pools(bookstore, target, address)
    peak = 0
    done = threading.Event()

    def sample() -> None:
        nonlocal peak
        while not done.wait(0.05):
            peak = max(peak, sessions()[0])

    sampler = threading.Thread(target=sample)
    sampler.start()
    try:
        # 60 s: on two shared cores a single process (PyPy's, its JIT still cold) may need tens of seconds of CPU
        # for 300 requests; a client's timeout here would say nothing about the pool.
        answers = concurrently([lambda: timed_status(address, timeout=60)] * 300, workers=300)
    finally:
        done.set()
        sampler.join()
    statuses = Counter(status for status, _, _ in answers)
    unexpected = [(status, text) for status, text, _ in answers if status != 200 and POOL_503 not in text]
    assert not unexpected, (statuses, unexpected[:3])
    # A pool that refused every request would pass the line above. How many are served before the others' wait
    # runs out is the CPU's speed (a CI run: 112 of 300 on PyPy's worker alone, 299 on others); what the pool
    # must do is serve at least as many as it holds, and refuse a request only after it waited the pool's timeout.
    assert statuses[200] >= target.db_pool, statuses
    early = [
        (round(seconds, 2), text) for status, text, seconds in answers if POOL_503 in text and seconds < pool_wait(text)
    ]
    assert not early, (statuses, early[:3])
    assert 0 < peak <= TOTAL_POOL + HEALTH_CONNECTIONS + 4, peak
    # Pools keep their connections, so what is open now is each one's most.
    assert pool_sessions(bookstore, bookstore.address(target.service)) <= target.db_pool
    assert "too many clients" not in bookstore.compose("logs", "postgres").stdout


LOCK_HOLDER = "bookstore-tests-lock"  # the application_name of the psql session that holds the lock


@contextmanager
def authors_locked(bookstore: Bookstore) -> Iterator[None]:
    """A slow query on demand, at any SCALE: a psql session of its own holds an ACCESS EXCLUSIVE lock on authors,
    so every statement that reads authors waits in Postgres, holding its pooled connection, until the lock goes
    (the block's end) or the statement timeout cancels it."""
    command = [*compose_command(), "--project-name", bookstore.scenario, "--file", str(bookstore.file), "exec", "-T",
               "-e", f"PGAPPNAME={LOCK_HOLDER}", "postgres", "psql", "-U", "postgres", "-d", "bookstore", "-c",
               "BEGIN; LOCK TABLE authors IN ACCESS EXCLUSIVE MODE; SELECT pg_sleep(120)"]  # fmt: skip
    holder = subprocess.Popen(
        command, cwd=ROOT, env=bookstore.environment, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        deadline = time.monotonic() + 20
        while not lock_held(bookstore):
            assert holder.poll() is None and time.monotonic() < deadline, "the lock on authors was not taken"
            time.sleep(0.1)
        yield
    finally:
        bookstore.psql(
            f"SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = '{LOCK_HOLDER}'"
        )
        holder.wait(timeout=30)


def lock_held(bookstore: Bookstore) -> bool:
    return (
        bookstore.psql(
            "SELECT count(*) FROM pg_locks JOIN pg_stat_activity USING (pid) WHERE relation = 'authors'::regclass"
            f" AND mode = 'AccessExclusiveLock' AND granted AND application_name = '{LOCK_HOLDER}'"
        )
        == "1"
    )


def app_statements_waiting(bookstore: Bookstore, query_like: str) -> dict[str, int]:
    """The apps' statements (their request pools' sessions) waiting for a lock, per container address."""
    rows = bookstore.psql(
        "SELECT client_addr, count(*) FROM pg_stat_activity WHERE application_name = 'bookstore'"
        f" AND state = 'active' AND wait_event_type = 'Lock' AND query ILIKE '{query_like}' GROUP BY client_addr"
    )
    return {line.split("|")[0]: int(line.split("|")[1]) for line in rows.splitlines()}


@premise_checked
def test_an_abandoned_query_stops_at_the_statement_timeout(bookstore: Bookstore) -> None:
    # On every target at once: a page whose client gives up after 1 s (the abandoned query: nothing tells Postgres
    # its client has gone) and an author whose client waits (the answer a timed-out statement gets).
    answers: dict[tuple[str, str], tuple[int, str, float]] = {}

    def fetch(target: Target, path: str, timeout: float) -> None:
        started = time.monotonic()
        status, text = get_status(url(target, path), timeout=timeout)
        answers[target.name, path] = (status, text, time.monotonic() - started)

    waiting: list[tuple[float, int]] = []  # (seconds since the requests, abandoned pages still in Postgres)
    with authors_locked(bookstore):
        sent = time.monotonic()
        clients = [threading.Thread(target=fetch, args=(target, path, timeout))
                   for target in TARGETS for path, timeout in (("/author?limit=20", 1), ("/author/1", 30))]  # fmt: skip
        for thread in clients:
            thread.start()
        deadline = sent + STATEMENT_TIMEOUT + 10
        while time.monotonic() < deadline:
            count = sum(app_statements_waiting(bookstore, "%LIMIT%").values())
            waiting.append((time.monotonic() - sent, count))
            if count == 0 and waiting[-1][0] > 1.5:
                break
            time.sleep(0.2)
        still_locked = lock_held(bookstore)
        for thread in clients:
            thread.join()
    after_clients_left = [count for seconds, count in waiting if 1.2 < seconds < STATEMENT_TIMEOUT - 1]
    # The WSGI servers' statements run on after their clients have gone; Quart's (uvicorn cancels the request's
    # task on the disconnect, and psycopg then cancels its statement) may stop at once.
    assert after_clients_left and min(after_clients_left) >= len(TARGETS) - 1, waiting
    gone_at = waiting[-1][0]
    assert waiting[-1][1] == 0 and gone_at < STATEMENT_TIMEOUT + 4, waiting  # not left running: cancelled
    assert still_locked  # by the statement timeout, not because the lock went
    for target in TARGETS:
        status, text, seconds = answers[target.name, "/author?limit=20"]
        assert status == 0, (target.name, status, text)  # the client did give up
        status, text, seconds = answers[target.name, "/author/1"]
        assert status == 504 and "statement timeout" in text and "\n" not in text.strip(), (target.name, text)
        assert STATEMENT_TIMEOUT - 0.5 < seconds < STATEMENT_TIMEOUT + 5, (target.name, seconds)
        assert get_status(url(target, "/author/1"), timeout=10)[0] == 200  # the pool serves again
    print(f"abandoned statements in Postgres: {waiting[0]} ... {waiting[-1]} (s, count)")


@premise_checked
def test_the_wait_for_a_load_s_last_queries_reads_them_here_or_asks_postgres(
    bookstore: Bookstore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """make bookstore waits, after each load, until no session of Postgres is busy: read from the backends' titles
    here, or, where this machine cannot see the engine's processes, asked of Postgres. Both wait out a 2 s query,
    and both count the sessions the pools keep open alike."""
    # Over TCP, as the apps' and pgbench's sessions (psql's own, on the local socket, neither way counts).
    password = bookstore.environment.get("POSTGRES_PASSWORD") or "playground"
    sleep = ["exec", "-T", "-e", f"PGPASSWORD={password}", "postgres", "psql", "-h", "127.0.0.1", "-U", "postgres"]
    sleep += ["-d", "bookstore", "-c", "SELECT pg_sleep(2)"]
    for seen in (True, False):
        monkeypatch.setattr(bookstore, "sees_processes", lambda service, seen=seen: seen)
        query = threading.Thread(target=bookstore.compose, args=sleep)
        query.start()
        count = postgres.session_counter(bookstore)
        deadline = time.monotonic() + 10
        while not count()[1] and time.monotonic() < deadline:  # until the query has begun
            time.sleep(0.05)
        waited = postgres.settle(bookstore)
        query.join()
        assert 0.8 <= waited <= 4.0, (seen, waited)  # most of the 2 s query still to run
    # The sessions counted here, asked of Postgres, then here again, back to back: the pools open sessions as the
    # apps' healthchecks come, so two counts seconds apart can differ by more than the ways of counting do (a CI run:
    # 15 here, 17 asked 3 s later). A healthcheck may open one in between: one outside the two counts here at most.
    counts = []
    for seen in (True, False, True):
        monkeypatch.setattr(bookstore, "sees_processes", lambda service, seen=seen: seen)
        counts.append(postgres.session_counter(bookstore)()[0])
    here_before, asked, here_after = counts
    assert here_before > 0 and min(here_before, here_after) - 1 <= asked <= max(here_before, here_after) + 1, counts


SATURABLE = [target for target in TARGETS if target.mode in ("gevent", "asyncio")]  # they hold more than the pool


MOST = 6  # requests to one target, at most, in times its pool


def send_reads(pool: ThreadPoolExecutor, target: Target, count: int) -> list[Future]:
    return [pool.submit(get_status, url(target, "/author/1"), timeout=60) for _ in range(count)]


@premise_checked
def test_the_healthcheck_answers_while_the_pool_is_busy(bookstore: Bookstore) -> None:
    # The targets that hold more requests than their pool's connections: with every pooled connection of every
    # process busy in a slow statement, GET /health still answers within Docker's 2 s. (A thread server has as
    # many threads as connections: there a busy pool is a busy server, with no thread left for any request.)
    full = sorted(target.db_pool for target in SATURABLE)
    by_address = {bookstore.address(target.service): target for target in SATURABLE}
    with ThreadPoolExecutor(sum(target.db_pool * MOST for target in SATURABLE)) as pool:
        with authors_locked(bookstore):
            sent = time.monotonic()
            load = {target.name: send_reads(pool, target, target.db_pool * 3) for target in SATURABLE}
            busy: dict[str, int] = {}
            while time.monotonic() < sent + STATEMENT_TIMEOUT - 2 and sorted(busy.values()) != full:
                time.sleep(0.5)
                busy = app_statements_waiting(bookstore, "%authors.id = %")
                # Processes that share a socket do not share its connections evenly (a gevent process may take
                # most before its sibling wakes): more requests to a target until each of its pools is full.
                for address, target in by_address.items():
                    if busy.get(address, 0) < target.db_pool and len(load[target.name]) < target.db_pool * MOST:
                        load[target.name] += send_reads(pool, target, target.db_pool)
            saturated = time.monotonic() - sent
            checks = concurrently([lambda target=target: get_status(url(target, "/health"), timeout=2)
                                   for target in SATURABLE], workers=len(SATURABLE))  # fmt: skip
            busy_after = app_statements_waiting(bookstore, "%authors.id = %")
        answers = [future.result() for futures in load.values() for future in futures]  # the lock gone: in turn
    if sorted(busy.values()) != full:  # the premise: a CI run once saw one target's process at 1 of 16 after 6 s
        raise PremiseNotMet(f"not every pool full after {saturated:.1f} s: {busy}")
    assert [status for status, _ in checks] == [200] * len(SATURABLE), checks
    assert busy_after == busy, (busy, busy_after)  # and still full after /health answered
    statuses = Counter(status for status, _ in answers)
    # 504: a request held in the lock past the statement timeout; the pool's 503: one still waiting for a connection
    # when its pool's timeout was up, as the queue drained after the lock (a CI run: 31 of 256, the CPU held by the
    # other parts). Each a clear answer, never another error.
    unclear = [(status, text) for status, text in answers if status not in (200, 504) and POOL_503 not in text]
    assert not unclear and statuses[200] > len(answers) / 2, (statuses, unclear[:3])
    print(f"pools full after {saturated:.1f} s; then {statuses}")


@premise_checked
def test_writes_under_load_lose_nothing(bookstore: Bookstore) -> None:
    run = uuid.uuid4().hex[:12]
    acknowledged: dict[int, str] = {}
    refused: list[tuple[int, str]] = []
    lost: list[str] = []  # answers the client never got: the row may or may not exist
    lock = threading.Lock()
    deadline = time.monotonic() + 8

    def client(number: int) -> None:
        chooser = random.Random(number)
        target = TARGETS[number % len(TARGETS)]
        sent = 0
        while time.monotonic() < deadline:
            sent += 1
            if chooser.random() < 0.1:
                marker = f"load {run} client {number} write {sent}"
                try:
                    response = requests.post(url(target, "/author"), json=new_author(marker), timeout=15)
                except requests.RequestException:
                    with lock:
                        lost.append(marker)
                    continue
                with lock:
                    if response.status_code == 201:
                        acknowledged[response.json()["id"]] = response.json()["name"]
                    else:
                        refused.append((response.status_code, response.text[:200]))
            else:
                status, text = get_status(url(target, f"/author/{chooser.randint(1, SCALE)}"))
                if status != 200:
                    with lock:
                        refused.append((status, text))

    concurrently([lambda number=number: client(number) for number in range(50)], workers=50)
    rows = bookstore.psql(f"SELECT id || '|' || name FROM authors WHERE name LIKE 'load {run} %'")
    stored = {int(line.split("|", 1)[0]): line.split("|", 1)[1] for line in rows.splitlines()}
    unacknowledged = {key: name for key, name in stored.items() if key not in acknowledged}
    assert not refused, refused[:3]
    assert len(acknowledged) > 20  # the load did write
    assert {key: stored.get(key) for key in acknowledged} == acknowledged  # every 201 is in the database
    # A row nobody acknowledged may only come from a write whose answer the client lost (reported, not hidden).
    assert set(unacknowledged.values()) <= set(lost), (unacknowledged, lost)
    # On a server that works, a write's answer is not lost: a few timeouts on a slow machine, not a tenth of them.
    assert len(lost) <= max(2, len(acknowledged) // 10), f"{len(lost)} writes lost, {len(acknowledged)} acknowledged"
    print(f"{len(acknowledged)} writes acknowledged, {len(lost)} answers lost to the client's timeout")


@premise_checked
def test_postgres_restart_under_load(bookstore: Bookstore) -> None:
    answers: list[tuple[float, Target, int, str]] = []
    checks: list[tuple[float, Target, int, str]] = []  # GET /health, on its own connection
    stop = threading.Event()

    def client(target: Target) -> None:
        chooser = random.Random(target.port)
        while not stop.is_set():
            status, text = get_status(url(target, f"/author/{chooser.randint(1, SCALE)}"))
            answers.append((time.monotonic(), target, status, text))
            time.sleep(0.05)

    def healthcheck(target: Target) -> None:
        while not stop.is_set():
            status, text = get_status(url(target, "/health"), timeout=5)
            checks.append((time.monotonic(), target, status, text))
            time.sleep(0.25)

    clients = [threading.Thread(target=client, args=(target,)) for target in TARGETS for _ in range(3)]
    clients += [threading.Thread(target=healthcheck, args=(target,)) for target in TARGETS]
    for thread in clients:
        thread.start()
    try:
        time.sleep(2)
        bookstore.stop("postgres")
        stopped = time.monotonic()
        # 8 s down: a check begun while Postgres was stopping may wait out libpq's 3 s connect timeout on the
        # address that is going away and the health pool's 2 s, so each target answers its next checks in the window.
        time.sleep(8)
        starting = time.monotonic()
        bookstore.start("postgres")
        bookstore.wait_healthy(60)  # Postgres, and each app's /health
        healthy = time.monotonic()
        time.sleep(10)
    finally:
        stop.set()
        for thread in clients:
            thread.join()
    while_down = [
        (target.name, status, text) for when, target, status, text in answers if stopped + 1 < when < starting
    ]
    assert while_down and all(status == 503 for _, status, _ in while_down), Counter(
        (name, status, text[:60]) for name, status, text in while_down
    )
    assert all("database" in text for _, _, text in while_down)
    assert all(status in (200, 503) for _, _, status, _ in answers)
    checks_while_down = [
        (target.name, status, text, round(when - stopped, 2))
        for when, target, status, text in checks
        if stopped + 1 < when < starting
    ]
    assert {name for name, *_ in checks_while_down} == {target.name for target in TARGETS}, checks_while_down
    # Each check that was not the 503, with when it ended (seconds after the stop).
    other = [check for check in checks_while_down if not (check[1] == 503 and "database unavailable" in check[2])]
    assert not other, other
    for target in TARGETS:  # and healthy again once Postgres is
        late = [status for when, name, status, _ in checks if name is target and when > healthy + 2]
        assert late and all(status == 200 for status in late), (target.name, Counter(late))
    for target in TARGETS:  # every target serves again within 10 s of a healthy Postgres, and keeps serving
        late = [status for when, name, status, _ in answers if name is target and when > healthy + 10 - 2]
        assert late and all(status == 200 for status in late), (target.name, Counter(late))
        first_ok = min(when for when, name, status, _ in answers if name is target and when > healthy and status == 200)
        assert first_ok - healthy < 10


# Every statement Postgres runs, logged with the phase of the extended protocol it came in (parse, bind, execute:
# each a line of its own), the statement's name (<unnamed> or a prepared one) and the session's application_name.
STATEMENT_LOGGING = {"log_min_duration_statement": "0", "log_line_prefix": "'%m [%p] %a: '"}
APP_STATEMENT = re.compile(r" bookstore: LOG:  duration: [\d.]+ ms  (?:(parse|bind|execute) (\S+)|statement): (\w+)")


@contextmanager
def statements_logged(bookstore: Bookstore) -> Iterator[None]:
    for name, value in STATEMENT_LOGGING.items():
        bookstore.psql(f"ALTER SYSTEM SET {name} = {value}")
    bookstore.psql("SELECT pg_reload_conf()")
    try:
        yield
    finally:  # the data's volume outlives the stack: leave its configuration as it was
        for name in STATEMENT_LOGGING:
            bookstore.psql(f"ALTER SYSTEM RESET {name}")
        bookstore.psql("SELECT pg_reload_conf()")


def how_reads_arrive(bookstore: Bookstore, target: Target, requests: int) -> Counter[tuple[str, str, str]]:
    """What Postgres ran for `requests` GETs of an author, one after another, sent to one target: a count per
    (protocol phase or "statement", "unnamed" or "named", the statement's first word)."""
    marker = f"reads-{uuid.uuid4().hex}"
    bookstore.psql(f"SELECT '{marker}-begin'")
    for author_id in range(1, requests + 1):
        assert get_status(url(target, f"/author/{author_id}"))[0] == 200
    bookstore.psql(f"SELECT '{marker}-end'")  # logged after every statement the requests sent
    log = bookstore.compose("logs", "--no-color", "postgres").stdout
    window = log[log.index(f"{marker}-begin") : log.index(f"{marker}-end")]
    found: Counter[tuple[str, str, str]] = Counter()
    for phase, name, word in APP_STATEMENT.findall(window):
        found[phase or "statement", "" if not phase else "unnamed" if name == "<unnamed>" else "named", word] += 1
    return found


def test_reads_that_roll_back_are_never_prepared_and_reads_that_commit_are(bookstore: Bookstore) -> None:
    """psycopg prepares a statement the 5th time a connection runs it, but forgets its counts at every ROLLBACK:
    the app's reads as they are (READS_END_WITH=rollback) send every SELECT unnamed, parsed afresh each time;
    reads that commit send prepared statements once warm. On the Flask app (gevent) and its asyncio port."""
    chosen = [target for target in TARGETS if target.name in ("bookstore-gunicorn-gevent", "bookstore-quart-uvicorn")]
    requests = 40
    with statements_logged(bookstore):
        as_is = {target.name: how_reads_arrive(bookstore, target, requests) for target in chosen}
        try:
            bookstore.environment["READS_END_WITH"] = "commit"
            bookstore.compose("up", "--detach", "--no-deps", *(target.service for target in chosen))
            bookstore.wait_healthy(120)
            committing = {target.name: how_reads_arrive(bookstore, target, requests) for target in chosen}
        finally:
            bookstore.environment.pop("READS_END_WITH")
            bookstore.compose("up", "--detach", "--no-deps", *(target.service for target in chosen))
            bookstore.wait_healthy(120)
    for target in chosen:
        seen = as_is[target.name]
        # Two SELECTs a request (the author, then their books), each parsed, planned and run unnamed.
        assert min(seen["parse", "unnamed", "SELECT"], seen["execute", "unnamed", "SELECT"]) >= 2 * requests, seen
        assert not [key for key in seen if key[1] == "named"], seen
        assert seen["statement", "", "ROLLBACK"] >= requests and not seen["statement", "", "COMMIT"], seen
        seen = committing[target.name]
        # A connection runs a statement unnamed 4 times, then prepares it (one "parse" with a name) and from then on
        # only binds and executes it: at least half the SELECTs run prepared, at most half are parsed.
        parsed = seen["parse", "unnamed", "SELECT"] + seen["parse", "named", "SELECT"]
        executed = seen["execute", "unnamed", "SELECT"] + seen["execute", "named", "SELECT"]
        assert seen["execute", "named", "SELECT"] >= requests and 2 * parsed <= executed, seen
        # The reads commit; a ROLLBACK comes only from SQLAlchemy's checks on a new process's first connection.
        assert seen["statement", "", "COMMIT"] >= requests and seen["statement", "", "ROLLBACK"] <= 2, seen
        print(f"{target.name}: as is {dict(as_is[target.name])}; reads that commit {dict(seen)}")


def test_each_rung_of_the_ladder_reads_as_it_says(bookstore: Bookstore) -> None:
    """From the ladder's first rung on, reads commit and run from prepared statements once warm; from its second,
    one statement a request instead of two (the author joined to their books and genres)."""
    requests = 40
    # After the Postgres restart test each process's first request on its dead connections is a 503 (SQLAlchemy then
    # drops the whole pool). Answers in a row need not reach both processes of a rung with two (a CI run: 20 in a row,
    # then a 503 among the 40): the rungs start again, with new pools (nothing in flight: stopped within 5 s).
    bookstore.compose("restart", "--timeout", "5", *[rung.service for rung in RUNGS])
    bookstore.wait_healthy(60)
    for rung in RUNGS:
        deadline, in_a_row = time.monotonic() + 30, 0
        while in_a_row < 20:
            in_a_row = in_a_row + 1 if get_status(url(rung, "/author/1"))[0] == 200 else 0
            assert time.monotonic() < deadline, rung.name
    with statements_logged(bookstore):
        seen = {rung.name: how_reads_arrive(bookstore, rung, requests) for rung in RUNGS}
    for rung in RUNGS:
        found = seen[rung.name]
        per_request = 2 if rung.rung < 2 else 1
        executed = found["execute", "unnamed", "SELECT"] + found["execute", "named", "SELECT"]
        # SQLAlchemy's first connection of a process adds a few statements of its own.
        assert per_request * requests <= executed <= per_request * requests + 10, (rung.name, found)
        assert found["execute", "named", "SELECT"] >= per_request * requests // 2, (rung.name, found)
        assert found["statement", "", "COMMIT"] >= requests, (rung.name, found)
