"""make yourapp's load read per request of the file, its login and its writes, without Docker: vegeta's results as
it writes them, a requests file's `# login` and `# lookup:`, the cookies of a login carried into vegeta's targets,
each acknowledged write looked up afterwards, SQLite's lock counted from Flask's log, and what the page says of
them. Where vegeta is installed, a real attack on a small server of the test's own (127.0.0.1, a port of its own)."""

from __future__ import annotations

import base64
import http.server
import json
import re
import shutil
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

import pytest

from bench.loadgen.vegeta import closed_loop_command
from bench.loadgen.vegeta_targets import (
    RequestsFileError,
    RequestSpec,
    read_requests,
    request_of,
    vegeta_json_targets,
    with_session,
)
from bench.measure.client import build_loadgen_image
from bench.modes.yourapp import render as page
from bench.modes.yourapp.load import summarise
from bench.modes.yourapp.record import YourAppResult, outcome
from bench.modes.yourapp.session import (
    acknowledged,
    cookie_header,
    errors_in_log,
    locked_in_log,
    log_in,
    look_up,
    send,
    send_samples,
)

FLASKR = Path(__file__).resolve().parent.parent / "yourapp" / "examples" / "flaskr" / "requests.txt"


def write(folder: Path, text: str, bodies: dict[str, str] | None = None) -> Path:
    for name, body in (bodies or {}).items():
        (folder / name).write_text(body)
    path = folder / "requests.txt"
    path.write_text(text)
    return path


def result(line: int, code: int, method: str = "GET", path: str = "/", mark: str = "", error: str = "") -> dict:
    """One of vegeta's results as `vegeta encode -to json` writes it, its URL's fragment naming its request."""
    fragment = f"line-{line}" + (f"-mark-{mark}" if mark else "")
    return {"url": f"http://10.0.0.2:3000{path}#{fragment}", "method": method, "code": code, "latency": 2_000_000,
            "error": error, "body": ""}  # fmt: skip


# --- 1. An answer counts only with its own request's expected status ---

MIX = [
    RequestSpec(3, "GET", "/", (), b"", None, 2),  # the development server's status: 200
    RequestSpec(6, "POST", "/create", (), b"title=a&csrf=t", 302, 1),
    RequestSpec(10, "POST", "/create", (), b"title=", 400, 1),  # a form without a title: its error is the answer
]
STATUSES = {3: 200, 6: 302, 10: 400}


def test_each_answer_counts_only_with_its_own_request_s_expected_status() -> None:
    """A 429 where the development server answered 200, a 400 where the file expects 302 (a CSRF token refused):
    not answers, though below 500. Two requests share POST /create and differ in body and expected status: each
    result is counted for its own request of the file, by the fragment vegeta keeps in its URL."""
    results = [
        *[result(3, 200)] * 3, result(3, 429), result(3, 0, error="Post ...: context deadline exceeded"),
        *[result(6, 302, "POST", "/create")] * 4, result(6, 400, "POST", "/create"),
        *[result(10, 400, "POST", "/create")] * 2,
    ]  # fmt: skip
    found = summarise(results, MIX, STATUSES, 4, 2.0, [], cpu=0.9, rss_mb=None, processes=None, loadgen_cpu=None)
    assert (found.requests, found.errors, found.rps) == (12, 3, 4.5)  # 9 answers with their status over 2 s
    assert found.cpu_ms_per_request == 100.0  # over the 9 answered
    assert found.failure_kinds == {"status": 2, "timeout": 1}
    assert list(found.per_type) == ["GET /", "POST /create (line 6)", "POST /create (line 10)"]
    assert found.per_type["POST /create (line 6)"] | {"p50_ms": None, "p99_ms": None} == {
        "line": 6, "expect": 302, "requests": 5, "answered": 4, "errors": 1, "statuses": {"302": 4, "400": 1},
        "p50_ms": None, "p99_ms": None,
    }  # fmt: skip
    assert found.per_type["POST /create (line 10)"]["errors"] == 0
    assert outcome(found.per_type["GET /"]) == "3 answered 200 as expected, 1 got no answer, 1 got 429"
    assert outcome(found.per_type["POST /create (line 6)"]) == "4 answered 302 as expected, 1 got 400"


def test_a_result_that_names_no_request_of_the_file_is_an_error_not_a_guess() -> None:
    untied = {**result(3, 200), "url": "http://10.0.0.2:3000/"}
    with pytest.raises(ValueError, match="names no request of the file"):
        summarise([untied], MIX, STATUSES, 1, 1.0, [], cpu=None, rss_mb=None, processes=None, loadgen_cpu=None)


def test_each_json_target_names_its_request_in_its_fragment() -> None:
    urls = [json.loads(line)["url"] for line in vegeta_json_targets(MIX, "http://web:8000").splitlines()]
    assert urls == ["http://web:8000/#line-3", "http://web:8000/create#line-6", "http://web:8000/create#line-10",
                    "http://web:8000/#line-3"]  # fmt: skip
    assert [request_of(url) for url in urls[:2]] == [(3, None), (6, None)]
    assert request_of("http://web:8000/create") is None


# --- 2. A login: its syntax, and its cookies carried into the targets ---

LOGGED_IN = """\
GET http://localhost/

# Logged in from here on. (Only `# login` alone on its line is the directive; this comment is any comment.)
# login
# expect: 302
POST http://localhost/auth/login
Content-Type: application/x-www-form-urlencoded
@login.body

GET http://localhost/profile
Cookie: theme=dark

# expect: 302
# lookup: /posts
POST http://localhost/create
@create.body
"""
BODIES = {"login.body": "username=test&password=test", "create.body": "title=post+{marker}&body=b"}


def test_a_login_and_a_write_in_a_good_file(tmp_path: Path) -> None:
    home, login, profile, create = read_requests(write(tmp_path, LOGGED_IN, BODIES))
    assert (login.line, login.login, login.expect, login.lookup) == (6, True, 302, None)
    assert not home.login and not profile.login and not create.login
    assert (create.lookup, create.expect, create.body) == ("/posts", 302, b"title=post+{marker}&body=b")
    assert create.marked("abc-15-000001").body == b"title=post+abc-15-000001&body=b"
    # The login is not in the mix; the requests after it carry its cookies, after any of their own.
    mix = with_session([home, login, profile, create], "session=s1; lang=en")
    assert [spec.line for spec in mix] == [1, 10, 15]
    assert mix[0].headers == ()
    assert mix[1].headers == (("Cookie", "theme=dark; session=s1; lang=en"),)
    assert mix[2].headers == (("Cookie", "session=s1; lang=en"),)
    assert with_session([home, login, profile], None)[1].headers == (("Cookie", "theme=dark"),)


R = "GET http://localhost/"
P = "POST http://localhost/create\n@create.body"


@pytest.mark.parametrize(
    ("text", "line", "what"),
    [
        (f"# login: yes\n{R}\n\n{R}\n", 1, 'bad login: "yes" (# login alone on its line: it takes no value)'),
        (f"# login\n{R}\n\n# login\n{R}a\n\n{R}\n", 4, "a second # login (the first: line 2): one per file"),
        (f"# login\n{R}\n# login\n\n{R}\n", 3, "a second # login: for one request (line 1)"),
        (f"# login\n# weight: 3\n{R}\n\n{R}\n", 2, "# weight: on the # login request, sent once, not in the mix"),
        (f"# login\n# lookup: /\n{P}\n\n{R}\n", 2, "# lookup: on the # login request, sent once, not in the mix"),
        (f"{R}\n\n# login\n{R}\n", 3, "# login: no request after it to carry its session"),
        (f"{R}\n\n# login\n\n{R}\n", 3, "# login: not directly above a request nor inside one"),
        (f"# lookup: posts\n{P}\n", 1, 'bad lookup: "posts" (a path of the app, as /posts, where each write shows)'),
        (f"# lookup:\n{P}\n", 1, 'bad lookup: ""'),
        ("# lookup: /posts\nPOST http://localhost/create\n@plain.body\n", 1, "# lookup: needs {marker} in its"),
    ],
)
def test_a_bad_login_or_write_is_one_line_naming_the_file_and_line(
    tmp_path: Path, text: str, line: int, what: str
) -> None:
    path = write(tmp_path, text, {"create.body": "title={marker}", "plain.body": "title=a"})
    with pytest.raises(RequestsFileError) as raised:
        read_requests(path)
    message = str(raised.value)
    assert "\n" not in message and message.startswith(f"{path}:{line}: {what}"), message


def test_flaskr_s_requests_log_in_and_write() -> None:
    requests = read_requests(FLASKR)
    login = [spec for spec in requests if spec.login]
    assert [(spec.name, spec.expect, spec.body) for spec in login] == [
        ("POST /auth/login", 302, b"username=test&password=test")
    ]
    writes = [spec for spec in with_session(requests, "session=s") if spec.lookup]
    assert [(spec.name, spec.expect, spec.lookup) for spec in writes] == [("POST /create", 302, "/")]
    assert ("Cookie", "session=s") in writes[0].headers and b"{marker}" in writes[0].body
    # The anonymous requests above the login keep their meaning: GET /create still redirects to the login page.
    anonymous = next(spec for spec in with_session(requests, "session=s") if spec.name == "GET /create")
    assert anonymous.headers == ()


@pytest.mark.parametrize(
    ("set_cookies", "header"),
    [
        (["session=abc.def; HttpOnly; Path=/"], "session=abc.def"),
        (["a=1; Path=/", "b=2", "a=3; Secure"], "b=2; a=3"),  # a later one of a name replaces an earlier
        (["a=1", "flash=; Max-Age=0; Path=/", "b=2; max-age=-1"], "a=1"),  # deleted ones left out
        (["no-equals-sign", "=nameless"], ""),
    ],
)
def test_the_cookie_header_a_login_gives(set_cookies: list[str], header: str) -> None:
    assert cookie_header(set_cookies) == header


# --- A small app of the test's own: a login, a form with a CSRF token, a page of posts that loses some ---


class App(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    seen: list[tuple[str, str, str | None]]  # method, path as it came, Cookie
    posts: list[str]
    writes = 0  # the writes it acknowledged
    lose_every = 0  # acknowledge every write, store all but every n-th

    def log_message(self, *args: Any) -> None:
        pass

    def answer(self, status: int, body: bytes = b"", headers: tuple[tuple[str, str], ...] = ()) -> None:
        self.send_response(status)
        for name, value in (*headers, ("Content-Length", str(len(body)))):
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        self.seen.append(("GET", self.path, self.headers.get("Cookie")))
        if self.path == "/posts":
            self.answer(200, "".join(f"<h1>{title}</h1>\n" for title in self.posts).encode())
        else:
            self.answer(200, b"home")

    def do_POST(self) -> None:
        form = parse_qs(self.rfile.read(int(self.headers.get("Content-Length") or 0)).decode())
        self.seen.append(("POST", self.path, self.headers.get("Cookie")))
        if self.path == "/login":
            if form.get("password") != ["right"]:
                return self.answer(200, b"wrong password")
            cookies = (("Set-Cookie", "sid=s3cr3t; HttpOnly; Path=/"), ("Set-Cookie", "flash=; Max-Age=0"))
            return self.answer(302, headers=(("Location", "/"), *cookies))
        if "sid=s3cr3t" not in (self.headers.get("Cookie") or ""):
            return self.answer(302, headers=(("Location", "/login"),))
        if form.get("csrf") != ["t"]:
            return self.answer(400, b"CSRF token missing")
        with lock:
            type(self).writes += 1
            if not (self.lose_every and type(self).writes % self.lose_every == 0):
                self.posts.append(form["title"][0])
        self.answer(302, headers=(("Location", "/posts"),))


lock = threading.Lock()


@pytest.fixture
def app() -> Iterator[tuple[int, type[App]]]:
    handler = type("TheApp", (App,), {"seen": [], "posts": [], "writes": 0, "lose_every": 0})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield server.server_address[1], handler
    server.shutdown()
    server.server_close()


APP_REQUESTS = """\
GET http://localhost/

# login
# expect: 302
POST http://localhost/login
@login.body

# expect: 302
# lookup: /posts
POST http://localhost/create
@create.body

# expect: 400
POST http://localhost/create
@nocsrf.body
"""
APP_BODIES = {"login.body": "user=a&password=right", "create.body": "title=post+{marker}&csrf=t",
              "nocsrf.body": "title=forged"}  # fmt: skip


def test_a_login_s_cookies_go_with_the_requests_after_it(tmp_path: Path, app: tuple[int, type[App]]) -> None:
    port, handler = app
    requests = read_requests(write(tmp_path, APP_REQUESTS, APP_BODIES))
    session = log_in(port, requests, f"127.0.0.1:{port}")
    assert session.cookie == "sid=s3cr3t"  # flash, deleted by the same answer, is not sent back
    text = vegeta_json_targets(session.mix, "http://app:3000", "feed0123")
    targets = [json.loads(line) for line in text.splitlines()]
    assert {target["url"].split("#")[0] for target in targets} == {"http://app:3000/", "http://app:3000/create"}
    for target in targets:
        line, mark = request_of(target["url"]) or (0, None)
        cookie = target.get("header", {}).get("Cookie")
        assert cookie == (None if line == 1 else ["sid=s3cr3t"]), target  # not the login's: it is not in the mix
        body = base64.b64decode(target.get("body", ""))
        assert (mark is not None) == (line == 10) and (mark is None or mark.encode() in body), target
    marks = [request_of(target["url"])[1] for target in targets if "mark" in target["url"]]  # type: ignore[index]
    assert len(marks) == len(set(marks)) == 200 and marks[0] == "feed0123-10-000001"
    wrong = [spec if not spec.login else RequestSpec(5, "POST", "/login", (), b"password=no", 302, 1, login=True)
             for spec in requests]  # fmt: skip
    with pytest.raises(ValueError, match=r"^line 5, POST /login \(# login\): status 200, expected 302$"):
        log_in(port, wrong, f"127.0.0.1:{port}")


def test_every_acknowledged_write_is_looked_up_and_a_lost_one_counted(
    tmp_path: Path, app: tuple[int, type[App]]
) -> None:
    port, handler = app
    handler.lose_every = 3
    host = f"127.0.0.1:{port}"
    requests = read_requests(write(tmp_path, APP_REQUESTS, APP_BODIES))
    session = log_in(port, requests, host)
    statuses = {1: 200, 10: 302, 14: 400}
    assert send_samples(port, host, session, statuses, "feed0123") == {}  # the sample: the app's 1st write, stored
    # What vegeta would have sent: marks 1 to 6 acknowledged (6 and 3 twice: vegeta cycled), one refused.
    create = next(spec for spec in session.mix if spec.lookup)
    sent = [1, 2, 3, 4, 5, 6, 3, 6]
    for number in sent:
        assert send(port, create.marked(f"feed0123-10-{number:06d}"), host).status == 302
    results = [result(10, 302, "POST", "/create", f"feed0123-10-{number:06d}") for number in sent]
    results.append(result(10, 500, "POST", "/create", "feed0123-10-000007"))  # not acknowledged: not looked for
    counted = acknowledged(results, statuses)
    assert counted["feed0123-10-000003"] == 2 and "feed0123-10-000007" not in counted
    found = look_up(port, host, session, "feed0123", counted, {})
    # Writes 3, 6 and 9 of the app lost: the sample was its 1st, so marks 2, 5 and the second 6 (its 3rd, 6th, 9th).
    assert found == {"POST /create (line 10)": {"lookup": "/posts", "acknowledged": 8, "found": 5, "lost": 3,
                                                 "found_unacknowledged": 0}}  # fmt: skip


def test_a_write_page_that_does_not_show_the_sample_is_said(tmp_path: Path, app: tuple[int, type[App]]) -> None:
    port, handler = app
    handler.lose_every = 1  # acknowledges every write, stores none
    host = f"127.0.0.1:{port}"
    session = log_in(port, read_requests(write(tmp_path, APP_REQUESTS, APP_BODIES)), host)
    samples = send_samples(port, host, session, {1: 200, 10: 302, 14: 400}, "feed0123")
    found = look_up(port, host, session, "feed0123", acknowledged([], {}), samples)
    assert found["POST /create (line 10)"]["problem"] == "its page /posts does not show the write sent before the load"
    refused = send_samples(port, host, session, {1: 200, 10: 201, 14: 400}, "feed0123")
    assert refused == {10: "the write sent before the load got status 302, expected 201"}


# Docker: where vegeta is not on this machine, its container (bench/loadgen/Dockerfile-vegeta) on the host's network,
# the test's folder mounted where it is; in the Docker part of the run, so that the container can be built.
@pytest.mark.docker
def test_vegeta_keeps_the_fragment_in_its_results_and_never_sends_it(
    tmp_path: Path, app: tuple[int, type[App]]
) -> None:
    """The real vegeta against the test's app: each result tied to its request of the file by its fragment, which
    the app never sees; the cookie on every request after the login; every write acknowledged and found."""
    port, handler = app
    host = f"127.0.0.1:{port}"
    session = log_in(port, read_requests(write(tmp_path, APP_REQUESTS, APP_BODIES)), host)
    statuses = {1: 200, 10: 302, 14: 400}
    samples = send_samples(port, host, session, statuses, "feed0123")
    targets = tmp_path / "targets.json"
    targets.write_text(vegeta_json_targets(session.mix, f"http://{host}", "feed0123"))
    tool: list[str] = []
    if not shutil.which("vegeta"):
        image = build_loadgen_image("vegeta")
        tmp_path.chmod(0o777)  # the container's user, nobody, writes its results there
        tool = ["docker", "run", "--rm", "--network", "host", "--volume", f"{tmp_path}:{tmp_path}", image]
    command = [*tool, *closed_loop_command(targets, 2, 0.5, tmp_path / "results.bin")]
    subprocess.run(command, check=True, capture_output=True, timeout=120)
    encoded = subprocess.run([*tool, "vegeta", "encode", "-to", "json", str(tmp_path / "results.bin")], check=True,
                             capture_output=True, text=True, timeout=120).stdout  # fmt: skip
    results = [json.loads(line) for line in encoded.splitlines()]
    found = summarise(results, session.mix, statuses, 2, 0.5, command, cpu=None, rss_mb=None, processes=None,
                      loadgen_cpu=None)  # fmt: skip
    assert found.errors == 0 and found.requests > 8, found
    assert {label: entry["statuses"] for label, entry in found.per_type.items()} == {
        "GET /": {"200": found.per_type["GET /"]["requests"]},
        "POST /create (line 10)": {"302": found.per_type["POST /create (line 10)"]["requests"]},
        "POST /create (line 14)": {"400": found.per_type["POST /create (line 14)"]["requests"]},
    }
    assert all("#" not in path for _, path, _ in handler.seen), handler.seen
    # The request above the login without its cookie, those after it with it, vegeta's and the sample write alike.
    assert {(method, path, cookie) for method, path, cookie in handler.seen if path != "/login"} == {
        ("GET", "/", None), ("POST", "/create", "sid=s3cr3t")
    }  # fmt: skip
    writes = look_up(port, host, session, "feed0123", acknowledged(results, statuses), samples)
    entry = writes["POST /create (line 10)"]
    answered = found.per_type["POST /create (line 10)"]["answered"]
    assert entry["lost"] == 0 and entry["found"] == entry["acknowledged"] == answered, entry


# --- 3. SQLite's lock, from Flask's log; and the page ---

FLASK_LOG = """\
[2026-11-28 10:00:01 +0000] [8] [INFO] Booting worker with pid: 8
[2026-11-28 10:00:02,101] ERROR in app: Exception on /create [POST]
Traceback (most recent call last):
  File "/app/flaskr/blog.py", line 83, in create
    db.commit()
sqlite3.OperationalError: database is locked
[2026-11-28 10:00:02,187] ERROR in app: Exception on /create [POST]
Traceback (most recent call last):
sqlite3.OperationalError: database is locked

During handling of the above exception, another exception occurred:
sqlite3.OperationalError: database is locked
[2026-11-28 10:00:03,001] ERROR in app: Exception on / [GET]
Traceback (most recent call last):
ZeroDivisionError: division by zero
"""


def test_sqlite_s_lock_is_counted_per_request_from_flask_s_log() -> None:
    assert locked_in_log(FLASK_LOG) == {"POST /create": 2}  # the chained traceback's request once
    assert locked_in_log("sqlite3.OperationalError: database is locked\n") == {"": 1}
    assert locked_in_log("no error at all") == {}


def test_the_log_s_errors_are_counted_once_per_failed_request_by_its_final_exception() -> None:
    assert errors_in_log(FLASK_LOG) == {
        "sqlite3.OperationalError: database is locked": 2,
        "ZeroDivisionError: division by zero": 1,
    }
    # Without Flask's heads (an app or server that logs its own way), each exception line, the most frequent three.
    shared = "psycopg2.DatabaseError: error with status PGRES_TUPLES_OK and no message from the libpq\n"
    other = "".join(f"ValueError: {n}\n" for n in range(4))
    assert errors_in_log(shared * 3 + other) == {shared.strip(): 3, "ValueError: 0": 1, "ValueError: 1": 1}
    assert errors_in_log("[INFO] Booting worker\nGET / 200\n") == {}


def record(**fields: Any) -> YourAppResult:
    raw = {"scenario": "yourapp", "target": "granian", "server": "granian", "mode": "sync", "workers": 1,
           "verified": True, "ok": True, "clients": 200, "rps": 90.0, **fields}  # fmt: skip
    return YourAppResult.from_json(raw)


def test_the_page_says_what_each_request_got_otherwise_and_the_writes() -> None:
    create = {"line": 14, "expect": 302, "requests": 150, "answered": 120, "errors": 30,
              "statuses": {"302": 120, "500": 30}, "p50_ms": 4.0, "p99_ms": None}  # fmt: skip
    home = {"line": 8, "expect": 200, "requests": 600, "answered": 600, "errors": 0, "statuses": {"200": 600}}
    writes = {"POST /create": {"lookup": "/", "acknowledged": 120, "found": 119, "lost": 1, "found_unacknowledged": 0}}
    unlooked = {"POST /create": {"lookup": "/", "acknowledged": 5, "problem": "its page / answered 500"}}
    records = [
        record(per_type={"GET /": home, "POST /create": create}, writes=writes, locked={"POST /create": 30}),
        record(target="waitress", per_type={"GET /": home}, writes=unlooked),
    ]
    said = "\n".join(page.status_lines(records) + page.writes_table(records) + page.writes_answer(records))
    assert (
        "- granian at 200 clients: `POST /create`: 120 answered 302 as expected, 30 got 500; SQLite's \"database is "
        "locked\" in the app's log 30 times (POST /create 30)"
    ) in said, said
    assert "waitress at 200 clients:" not in said.split("## Writes")[0]  # every request of it got its status
    assert "| granian | 200 | `POST /create` | `/` | 120 | 119 | 1 | 0 |" in said, said
    assert "- waitress at 200 clients, repeat 1, `POST /create`: its page / answered 500" in said
    assert "- 1 of 120 writes acknowledged under load were not found on their page afterwards: granian at 200" in said
    assert re.search(r"SQLite's \"database is locked\" failed 30 requests", said)


def test_a_record_from_before_statuses_per_request_renders_as_it_did() -> None:
    """The committed sets' records: per_type without statuses, no writes, no locked: no new section, no sentence."""
    old = record(per_type={"GET /": {"requests": 10, "errors": 2, "p50_ms": 1.0, "p99_ms": None}})
    assert page.status_lines([old]) == [] and page.writes_table([old]) == [] and page.writes_answer([old]) == []
