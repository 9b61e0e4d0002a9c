"""The bookstore (bookstore.yml) as the harness sees it, shared by `make bookstore` and `make incidents`: its scenario
and targets, its loads, its data's size, the check that a target answers from the data, and its writes, each looked
up by its marker and removed after a load."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any

import requests
import yaml

from bench.containers.compose import RunningScenario
from bench.containers.postgres import count_statements, query
from bench.containers.scenarios import ROOT, Target, target_fields
from bench.results.records import WritesChecked

SCENARIO = "bookstore"
COMPOSE_FILE = ROOT / "bookstore.yml"
DEFAULT_SCALE = 1_000_000
DATABASE = "bookstore"
PAGES = 50  # a list load reads one of 50 pages from its offset on: 1,000 authors, at about the same cost
PAGE = 20
# Every write of a run carries this prefix in its name: counted after the load, then deleted, so that the
# data volume keeps exactly SCALE authors for the next run and for the app's tests.
MARKER_PREFIX = "make-bookstore-"


@dataclass(frozen=True)
class BookstoreLoad:
    """One kind of traffic: what each request asks, from how many clients at once."""

    name: str
    request: str  # in words, for the tables
    clients: int
    offset_share: float | None = None  # list loads: the offset as a share of SCALE (the article's 5 % and 50 %)
    writes_per_thousand: int = 0
    # Longer for the slow loads: a few requests per second, and each measurement counts only the whole ones.
    duration_factor: float = 1.0
    # The clients of a sweep (--sweep): from below the pool to far past every pool and thread count.
    sweep: tuple[int, ...] = ()

    def first_offset(self, scale: int) -> int:
        return round(scale * (self.offset_share or 0))


# Clients, each load's own (docs/bookstore.md: what queues where). The fast ones at twice the pool (16): requests
# also wait for a connection in the app, as users' would. The slow page at the pool's size: the database works on
# 16 at once on two cores, each request holds its connection throughout, and none waits out the pool's 10 s for
# one. It runs longer: wrk counts only the answers in by its end, so a page still running then is lost (up to
# half a page per client), a share that shrinks with the length of the run.
DEFAULT_READS_END = "rollback"  # as bookstore.yml's READS_END_WITH: what most apps' reads do
LOADS = (
    BookstoreLoad("author", "GET /author/<random id>", 32, sweep=(8, 32, 128, 512)),
    BookstoreLoad("moderate", "GET /author?limit=20&offset=SCALE/20 + a page", 32, 0.05),
    BookstoreLoad("slow", "GET /author?limit=20&offset=SCALE/2 + a page", 16, 0.5, 0, 1.5, (4, 16, 64, 256)),
    BookstoreLoad("mixed", "90 % GET /author/<random id>, 10 % POST /author", 32, writes_per_thousand=100),
)
BY_NAME = {load.name: load for load in LOADS}
POST_BODY = {"name": "@@MARKER@@", "country_code": "GB", "date_of_birth": "1980-02-29", "biography": "bench"}


class BookstoreScenario(RunningScenario):
    """bookstore.yml as a RunningScenario, named by its file (the scenario list may not name it), removed on exit
    without its data volume: a million authors take minutes to generate, and the volume is the user's."""

    def __init__(self, environment: dict[str, str], services: list[str]) -> None:
        # Named by its file, not looked up; the first start generates the data. The ladder's profile: its services
        # are started only when named, and removed with the rest at the end.
        ladder = {**environment, "COMPOSE_PROFILES": "ladder"}
        super().__init__(SCENARIO, ready_timeout=1800.0, environment=ladder, files=(COMPOSE_FILE,))
        self.started = services  # and Postgres, which they depend on: only what is measured is built and started
        self.paused: set[str] = set()

    def __enter__(self) -> BookstoreScenario:
        # RunningScenario's, typed as this class: what `with BookstoreScenario(...) as running` gives is one.
        super().__enter__()
        return self

    def up(self) -> None:
        self.compose("up", "--detach", *(["--build"] if self.build else []), *self.started)
        self.wait_healthy()
        count_statements(self, DATABASE)

    def down(self) -> None:
        self.compose("down", "--remove-orphans", "--timeout", "10", check=False)


def bookstore_targets(environment: dict[str, str]) -> list[Target]:
    """The x-targets of bookstore.yml, as bench.containers.scenarios.load_targets reads a scenario's: the ways of
    serving, then the ladder's rungs."""
    document = yaml.safe_load(COMPOSE_FILE.read_text())
    settings = {**os.environ, **environment}
    return [Target(scenario=SCENARIO, **target_fields(entry, settings)) for entry in document["x-targets"]]


def psql(running: RunningScenario, sql: str) -> str:
    return query(running, DATABASE, sql)


def database_facts(running: RunningScenario) -> dict[str, Any]:
    """The data's size as the run's metadata keeps it: authors, books, and the database on disk."""
    authors = psql(running, "SELECT count(*) FROM authors")
    books = psql(running, "SELECT count(*) FROM books")
    size = psql(running, f"SELECT pg_size_pretty(pg_database_size('{DATABASE}'))")
    return {"authors": int(authors), "books": int(books), "size": size}


def verify(target: Target, load: BookstoreLoad, scale: int) -> str | None:
    """Why this load's requests cannot be trusted on this target, or None: the data is derived from the row
    number, so each answer is known."""
    url = target.url.rstrip("/")
    try:
        if load.offset_share is None:
            author_id = max(1, scale // 4)
            answer = requests.get(f"{url}/author/{author_id}", timeout=30)
            if answer.status_code != 200 or answer.json().get("name") != f"Author {author_id}":
                return f"GET /author/{author_id}: {answer.status_code} {answer.text[:100]!r}"
        else:
            offset = min(load.first_offset(scale), max(0, scale - PAGE))
            answer = requests.get(f"{url}/author", params={"limit": PAGE, "offset": offset}, timeout=60)
            ids = [author.get("id") for author in answer.json()] if answer.status_code == 200 else None
            if ids != list(range(offset + 1, offset + PAGE + 1)):
                return f"GET /author?offset={offset}: {answer.status_code} {answer.text[:100]!r}"
        if load.writes_per_thousand:
            body = json.loads(json.dumps(POST_BODY).replace("@@MARKER@@", f"{MARKER_PREFIX}verify"))
            answer = requests.post(f"{url}/author", json=body, timeout=30)
            if answer.status_code != 201 or answer.json().get("name") != body["name"]:
                return f"POST /author: {answer.status_code} {answer.text[:100]!r}"
    except (requests.RequestException, ValueError) as error:
        return f"no valid answer: {error.__class__.__name__}: {str(error)[:100]}"
    return None


def check_writes(running: RunningScenario, token: str, acknowledged: list[str]) -> WritesChecked:
    """Each write one by one: every acknowledged write's marker must be in the database; a marker in the database
    whose 201 wrk never read was in flight when wrk stopped (it closes its connections without the answers)."""
    stored = psql(running, f"SELECT name FROM authors WHERE name LIKE '{MARKER_PREFIX}{token}-%'").split()
    lost = sorted(set(acknowledged) - set(stored))
    return WritesChecked(
        writes_found=len(stored), writes_lost=len(lost), writes_lost_markers=lost[:5],
        writes_unacknowledged=len(set(stored) - set(acknowledged)),
    )  # fmt: skip


def remove_writes(running: RunningScenario) -> None:
    """Every row a run wrote (the capture's, the loads', pgbench's): the data stays SCALE authors."""
    psql(running, f"DELETE FROM authors WHERE name LIKE '{MARKER_PREFIX}%'")
