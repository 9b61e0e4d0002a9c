"""A requests file in vegeta's targets format read into a mix and written as vegeta's JSON targets, and the masked
comparison of an answer with the development server's: real files in tmp_path, apps served in this process by
Werkzeug's development server, the reference's own command as a process of its own; no Docker."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import random
import secrets
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from flask import Flask, Response, make_response, redirect, url_for
from itsdangerous import TimestampSigner, URLSafeTimedSerializer
from werkzeug.serving import make_server

from bench.loadgen.vegeta_targets import RequestsFileError, RequestSpec, read_requests, vegeta_json_targets
from bench.modes.yourapp import checks as yourapp_checks
from bench.modes.yourapp import load as yourapp_load
from bench.modes.yourapp import ways as yourapp_ways
from bench.modes.yourapp.answer_match import mask, same_answer
from bench.modes.yourapp.checks import (
    Answer,
    AnswerParts,
    Expected,
    difference,
    expected_answers,
    first_difference,
    reference_round,
)

GOOD = """\
# The blog's mix. Any comment that is not ours is left alone.
# expect: 302
# weight: 3
GET http://localhost:5000/auth/login?next=/
Accept: text/html
  # a comment inside a target, indented

POST http://localhost:5000/api/posts
Content-Type:  application/json
# expect: 201
X-Trace: a
X-Trace: b
@bodies/post.json
GET http://localhost:5000
GET https://example.com:8443/search?q=a b#results
"""


def write(folder: Path, text: str | bytes, name: str = "requests.txt") -> Path:
    path = folder / name
    path.write_bytes(text.encode() if isinstance(text, str) else text)
    return path


def test_a_good_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "bodies").mkdir()
    (tmp_path / "bodies" / "post.json").write_bytes(b'{"title": "\xff"}')
    path = write(tmp_path, GOOD.replace("q=a b", "q=a+b"))
    monkeypatch.chdir(tmp_path / "bodies")  # the body is found from the file's folder, not the working one
    login, post, root, search = read_requests(path)
    assert login == RequestSpec(4, "GET", "/auth/login?next=/", (("Accept", "text/html"),), b"", 302, 3)
    assert post == RequestSpec(
        8,
        "POST",
        "/api/posts",
        (("Content-Type", "application/json"), ("X-Trace", "a"), ("X-Trace", "b")),
        b'{"title": "\xff"}',
        201,
        1,
    )
    assert (root.line, root.name, root.expect, root.weight) == (14, "GET /", None, 1)
    assert (search.line, search.name, search.headers, search.body) == (15, "GET /search?q=a+b", (), b"")


def bad_file_error(tmp_path: Path, text: str | bytes) -> str:
    path = write(tmp_path, text)
    with pytest.raises(RequestsFileError) as raised:
        read_requests(path)
    message = str(raised.value)
    assert "\n" not in message and "\r" not in message, message
    assert message.startswith(f"{path}:"), message
    return message


R = "GET http://localhost:5000/"


@pytest.mark.parametrize(
    ("text", "line", "what"),
    [
        (f"{R}\nContent-Type\n", 2, 'bad header: "Content-Type"'),
        (f"{R}\nAccept: text/html\nContent-Type:\n", 3, 'bad header: "Content-Type:"'),
        (f"{R}\n: text/html\n", 2, 'bad header: ": text/html"'),
        (f"{R}\nContent Type: text/html\n", 2, 'bad header: "Content Type: text/html"'),
        (f"{R}a\nX-A: 1\n{R}b\n", 3, f'bad header: "{R}b" (a request after headers needs a blank line before it)'),
        (f"# a comment\n\n{R}\n\nget http://localhost:5000/\n", 5, 'bad method: "get"'),
        (f"{R}\n\nGET /path\n", 3, 'bad URL: "/path" (an absolute http:// URL, as vegeta reads)'),
        ("GET ftp://localhost/a\n", 1, 'bad URL: "ftp://localhost/a"'),
        ("GET http:///a\n", 1, 'bad URL: "http:///a"'),
        ("GET http://localhost:99999/a\n", 1, 'bad URL: "http://localhost:99999/a"'),
        ("GET http://localhost/a\rb\n", 1, r'bad URL: "http://localhost/a\rb"'),
        ("GET\n", 1, 'bad request line: "GET"'),
        (f"\n\n{R}\nX-A: 1\n\n\nPOST http://localhost:5000/\n@data.json\n", 8, "body file not found: data.json"),
        ("POST http://localhost:5000/\n@\n", 2, 'bad body: "@"'),
        ("POST http://localhost:5000/\n@.\n", 2, "body file unreadable: ."),
        (f"{R}\n\nPOST http://localhost:5000/\n@post.json\nX-A: 1\n", 5, 'bad method: "X-A:"'),
        (f"{R}\n\n\n# weight: 0\n{R}\n", 4, 'bad weight: "0"'),
        (f"{R}\n# weight: 1001\n", 2, 'bad weight: "1001"'),
        (f"# weight: +3\n{R}\n", 1, 'bad weight: "+3"'),
        (f"# expect: abc\n{R}\n", 1, 'bad expect: "abc"'),
        (f"# expect: 99\n{R}\n", 1, 'bad expect: "99"'),
        (f"# expect: 600\n{R}\n", 1, 'bad expect: "600"'),
        (f"# expect: 200\n{R}\n# expect: 302\n", 3, "a second # expect: for one request (line 1)"),
        (f"{R}\n\n# expect: 302\n\n{R}\n", 3, "# expect: not directly above a request nor inside one"),
        (f"{R}\n\n# weight: 2\n", 3, "# weight: not directly above a request nor inside one"),
        (b"# caf\xc3\xa9\n\nGET http://localhost:5000/caf\xe9\n", 3, "not UTF-8 (byte 0xe9)"),
        ("GET http://localhost/\x85\u2028x\n", 1, r'bad URL: "http://localhost/\x85\u2028x"'),
    ],
)
def test_a_bad_file_is_one_line_naming_the_file_and_line(tmp_path: Path, text: str, line: int, what: str) -> None:
    write(tmp_path, '{"title": 1}', "post.json")
    message = bad_file_error(tmp_path, text)
    assert message.startswith(f"{tmp_path / 'requests.txt'}:{line}: {what}"), message


@pytest.mark.parametrize("text", ["", "\n\n", "# expect is a convention of ours\n  # nothing else\n"])
def test_a_file_without_a_request(tmp_path: Path, text: str) -> None:
    assert bad_file_error(tmp_path, text) == f"{tmp_path / 'requests.txt'}: no request in it"


def test_a_file_that_is_not_there(tmp_path: Path) -> None:
    with pytest.raises(RequestsFileError, match=r"requests\.txt: cannot read it: No such file"):
        read_requests(tmp_path / "requests.txt")


def spec(method: str, target: str, weight: int = 1, body: bytes = b"", headers: tuple = ()) -> RequestSpec:
    return RequestSpec(1, method, target, headers, body, None, weight)


def test_json_targets_spread_the_weights() -> None:
    a, b, c = spec("GET", "/a", 3), spec("GET", "/b"), spec("GET", "/c", 2)
    lines = vegeta_json_targets([a, b], "http://web:8000").splitlines()
    # Each URL ends in its request's fragment (#line-N, never sent): the path before it is the request's.
    assert [json.loads(line)["url"].split("#")[0] for line in lines] == ["http://web:8000/" + name for name in "aaba"]
    lines = vegeta_json_targets([a, b, c], "http://web:8000").splitlines()
    targets = [json.loads(line)["url"].split("#")[0][-1] for line in lines]
    assert Counter(targets) == {"a": 3, "b": 1, "c": 2}
    # Any stretch of the list is about the mix: each request within one of its share in every prefix.
    for end in range(1, len(targets) + 1):
        for name, weight in (("a", 3), ("b", 1), ("c", 2)):
            assert abs(targets[:end].count(name) - end * weight / 6) <= 1, targets


def test_json_targets_carry_headers_and_the_body_in_base64() -> None:
    body = bytes(range(256))
    headers = (("X-Trace", "a"), ("Content-Type", "application/octet-stream"), ("X-Trace", "b"))
    text = vegeta_json_targets([spec("POST", "/api?x=1", 1, body, headers), spec("GET", "/")], "http://web:8000/")
    assert text.endswith("}\n") and text.count("\n") == 2  # vegeta drops a last target without its "\n"
    post, get = map(json.loads, text.splitlines())
    assert post["method"] == "POST" and post["url"] == "http://web:8000/api?x=1#line-1"
    assert post["header"] == {"X-Trace": ["a", "b"], "Content-Type": ["application/octet-stream"]}
    assert base64.b64decode(post["body"], validate=True) == body
    assert get == {"method": "GET", "url": "http://web:8000/#line-1"}


def page(token: str, date: str, change: tuple[bytes, bytes] | None = None) -> bytes:
    """A blog's ~100 KB page of posts, the same every time but for its CSRF token and its date."""
    pick = random.Random(7)
    words = ["the", "of", "and", "to", "in", "is", "you", "that", "it", "was", "for", "on", "as", "with", "they"]
    out = [
        "<!doctype html>\n<html><head><title>Posts</title></head><body>\n",
        f'<form method="post"><input type="hidden" name="csrf_token" value="{token}"></form>\n<h1>Posts</h1>\n<ul>\n',
    ]
    for number in range(1, 450):
        title = " ".join(pick.choice(words) for _ in range(6))
        text = " ".join(pick.choice(words) for _ in range(40))
        out.append(f'  <li class="post"><a href="/posts/{number}">{title}</a>\n    <p>{text}</p>\n  </li>\n')
    out.append(f"</ul>\n<footer>Rendered on {date}</footer>\n</body></html>\n")
    body = "".join(out).encode()
    return body.replace(*change) if change else body


FIRST, SECOND = page("a1" * 20, "2025-06-03 10:00:01"), page("Zq" * 20, "2025-07-14 11:22:33")
THIRD = page("x-9_" * 8, "2025-12-31 23:59:59")


def test_a_mask_matches_other_tokens_and_dates_only() -> None:
    assert len(FIRST) > 100_000
    masked = mask(FIRST, SECOND)
    assert masked.masked == 2, masked.literal_parts
    assert masked.difference(FIRST) is None and masked.difference(SECOND) is None
    assert masked.difference(THIRD) is None
    title = b'<a href="/posts/200">'
    changed = page("x-9_" * 8, "2025-12-31 23:59:59", (title, b'<a href="/posts/2OO">'))
    at = changed.index(b'/posts/2OO">') + len(b"/posts/2")
    expected, got = THIRD[at : at + 40], changed[at : at + 40]
    assert masked.difference(changed) == f"at byte {at}: expected {expected!r}..., got {got!r}..."
    at = len(b"<!doctype html>\n<html><head><title>")
    error_page = b"<!doctype html>\n<html><head><title>500 Internal Server Error</title></head></html>\n"
    assert masked.difference(error_page) == (
        f"at byte {at}: expected {FIRST[at : at + 40]!r}..., got b'500 Internal Server Error</title></head>'..."
    )


def test_identical_references_mask_nothing() -> None:
    masked = mask(FIRST, FIRST)
    assert (masked.masked, masked.literal_parts, masked.summary) == (0, (FIRST,), f"nothing masked, {len(FIRST)} bytes")
    assert masked.difference(FIRST) is None
    assert masked.difference(SECOND) is not None
    assert masked.difference(FIRST[:-1]) == f"at byte {len(FIRST) - 1}: expected b'\\n', got the end"
    assert masked.difference(b"") is not None
    assert mask(b"", b"").difference(b"") is None and mask(b"", b"").difference(b" ") is not None


def test_a_body_longer_or_shorter_than_the_reference_does_not_match() -> None:
    masked = mask(FIRST, SECOND)
    assert masked.difference(THIRD + b"<p>debug</p>") == f"at byte {len(THIRD)}: expected the end, got b'<p>debug</p>'"
    assert masked.difference(THIRD[:-8]) == f"at byte {len(THIRD) - 8}: expected b'</html>\\n', got the end"
    assert masked.difference(b" " + THIRD) is not None


def test_wildcards_at_the_ends_and_short_coincidences() -> None:
    at_start = mask(b"17 requests", b"2 requests")
    assert at_start.literal_parts == (b"", b" requests") and at_start.masked == 1
    assert at_start.difference(b"300 requests") is None
    assert at_start.difference(b"300 requests!") == "at byte 12: expected the end, got b'!'"
    at_end = mask(b"took 1.52", b"took 2.71")  # the "." of both numbers, a coincidence, is masked too
    assert at_end.literal_parts == (b"took ", b"") and at_end.difference(b"took 3") is None
    nonce = mask(b'nonce="ab+cd" ok', b'nonce="ef+gh" ok')
    assert nonce.difference(b'nonce="ijkl" ok') is None and nonce.summary == "1 part masked, 11 bytes stable"


def test_same_answer_looks_at_the_status_first() -> None:
    masked = mask(FIRST, SECOND)
    assert same_answer(200, masked, 200, THIRD) is None
    assert same_answer(200, masked, 500, THIRD) == "status 500, expected 200"
    assert same_answer(302, masked, 302, b"") == f"at byte 0: expected {FIRST[:40]!r}..., got the end"


@pytest.mark.timing
def test_masking_100_kb_is_quick() -> None:
    first = page("a1" * 20, "2025-06-03 10:00:01")
    second = page("b2" * 20, "2025-06-03 10:00:01")  # only the 40-character token differs
    started = time.perf_counter()
    masked = mask(first, second)
    assert masked.difference(THIRD.replace(b"2025-12-31 23:59:59", b"2025-06-03 10:00:01")) is None
    assert time.perf_counter() - started < 2
    # Quick, and not by masking more than differs: the token alone; the token and the date's 19 bytes.
    assert (masked.masked, masked.stable_bytes) == (1, len(first) - 40)
    started = time.perf_counter()
    masked = mask(FIRST, SECOND)
    assert masked.difference(THIRD) is None  # the token and the date, far apart
    assert time.perf_counter() - started < 2
    # The date masked whole: its year too, which the two answers shared and a way asked next year would not.
    assert (masked.masked, masked.stable_bytes) == (2, len(FIRST) - 40 - len("2025-06-03 10:00:01"))


# --- What the development server's answers say of a way's: whole tokens, two set-ups, the headers, the line ----------


def csrf_token(raw: str, signed_at: int, monkeypatch: pytest.MonkeyPatch) -> str:
    """A CSRF token as Flask-WTF writes one: its random raw token, signed with the second it was made (itsdangerous's
    URLSafeTimedSerializer, salt "wtf-csrf-token"): base64 parts joined by "." ("-" and "_" within them)."""
    monkeypatch.setattr(TimestampSigner, "get_timestamp", lambda self: signed_at)
    return URLSafeTimedSerializer("a test app's secret", salt="wtf-csrf-token").dumps(raw)


def form_page(token: str) -> bytes:
    return (
        '<form method="post">\n  <input id="csrf_token" name="csrf_token" type="hidden" value="' + token + '">\n'
        '  <label for="name">Name</label> <input id="name" name="name" type="text">\n</form>\n'
    ).encode()


def test_a_difference_masks_the_whole_token_it_falls_in(monkeypatch: pytest.MonkeyPatch) -> None:
    """The development server's two answers, asked in the same second, share their tokens' middle part (the time
    they were signed): kept as a literal, a way asked a second later never matched ("expected b'Yw.'")."""
    raw = [hashlib.sha1(str(n).encode()).hexdigest() for n in range(3)]
    first = form_page(csrf_token(raw[0], 1_795_000_000, monkeypatch))
    second = form_page(csrf_token(raw[1], 1_795_000_000, monkeypatch))
    later = form_page(csrf_token(raw[2], 1_795_000_061, monkeypatch))
    masked = mask(first, second)
    assert masked.masked == 1, masked.literal_parts
    assert masked.literal_parts[0].endswith(b'value="') and masked.literal_parts[1].startswith(b'">\n  <label')
    assert masked.difference(later) is None
    # The token is one wildcard, the rest still literal: another label is a difference.
    changed = later.replace(b">Name<", b">Nom<")
    assert "expected b'ame</label> <input" in (masked.difference(changed) or ""), masked.difference(changed)
    # Tokens of other lengths, with "-", "_", "=", "+" and "/", whatever the two shared.
    nonce = mask(b'<script nonce="a+b/c=d-e_f.1">', b'<script nonce="x+b/c=d-e_g.2">')
    assert nonce.literal_parts == (b'<script nonce="', b'">')
    assert nonce.difference(b'<script nonce="Q9z">') is None


def test_a_date_or_time_is_masked_whole() -> None:
    """Two answers a few seconds apart share the day, the hour and the minute; a way asked minutes, or a day, later
    does not: a difference inside a date or a time masks all of it."""
    first = b'{"seen":"2026-11-27T23:59:50.1+00:00","at":"Fri, 27 Nov 2026 23:59:50 GMT","on":"2026-11-27 at 23:59:50"}'
    second = first.replace(b"23:59:50.1", b"23:59:57.9").replace(b"23:59:50", b"23:59:57")
    masked = mask(first, second)
    assert masked.literal_parts == (b'{"seen":"', b'","at":"', b'","on":"', b'"}'), masked.literal_parts
    next_day = b'{"seen":"2026-11-28T00:03:01Z","at":"Sat, 28 Nov 2026 00:03:01 GMT","on":"2026-11-28 at 00:03:01"}'
    assert masked.difference(next_day) is None
    # What is not a date or a token is not masked: a word that changed.
    assert masked.difference(next_day.replace(b'"on"', b'"in"')) is not None


@contextmanager
def serving(app: Flask) -> Iterator[int]:
    """The app on Werkzeug's development server, threaded, on a free port of 127.0.0.1: its port."""
    server = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_port
    finally:
        server.shutdown()
        thread.join(timeout=10)


def seeded_app(last_seen: datetime, visitor: str, salt: str) -> Flask:
    """An app greeting the visitor its set-up wrote: the time, a random id, a fingerprint made with a random salt."""
    app = Flask(f"seeded-{visitor}")
    fingerprint = hashlib.sha256((salt + visitor).encode()).hexdigest()

    @app.get("/")
    def home() -> str:
        return f"<h1>Welcome back, visitor {visitor}</h1><p>Last seen {last_seen}</p><p>{fingerprint}</p>"

    @app.get("/api/me")
    def me() -> dict[str, object]:
        return {"visitor": visitor, "last_seen": last_seen, "fingerprint": fingerprint}

    return app


SET_UP = datetime(2026, 11, 27, 10, 0, 1, 250_000, tzinfo=UTC)
ASKED = [spec("GET", "/"), spec("GET", "/api/me")]


def fresh_set_up(seconds_later: float) -> Flask:
    return seeded_app(SET_UP + timedelta(seconds=seconds_later), str(uuid.uuid4()), secrets.token_urlsafe(16))


def reference_rounds(*set_ups: Flask) -> list[list[tuple[AnswerParts, AnswerParts]]]:
    rounds = []
    for app in set_ups:
        with serving(app) as port:
            rounds.append(reference_round(port, ASKED, f"127.0.0.1:{port}"))
    return rounds


def way_difference(app: Flask, expected: list[Expected]) -> str | None:
    with serving(app) as port:
        return first_difference(port, expected, f"127.0.0.1:{port}")


def test_what_set_ups_write_differently_is_masked_across_two() -> None:
    """Each way's fresh container runs SETUP again: a last_seen time, a random id and a salt it wrote differ from
    the reference's. Asked twice, one reference agrees with itself on all three; two set-ups show them."""
    rounds = reference_rounds(fresh_set_up(0), fresh_set_up(6))
    expected = expected_answers(ASKED, rounds)
    assert [e.status for e in expected] == [200, 200]
    # The way set up three minutes later, with its own id and salt.
    assert way_difference(fresh_set_up(180), expected) is None
    # From one set-up alone, its id was a literal that the way's own set-up did not write.
    one = expected_answers(ASKED, rounds[:1])
    assert (way_difference(fresh_set_up(180), one) or "").startswith("line 1, GET /: body differs at byte ")
    # The masks are the set-up's parts only: a page that says otherwise still differs.
    other = fresh_set_up(180)
    other.view_functions["home"] = lambda: "<h1>Welcome, visitor</h1>"
    assert (way_difference(other, expected) or "").startswith(
        "line 1, GET /: body differs at byte 11, after b'<h1>Welcome': expected b' back, visitor ', got b', visitor"
    )


def visitor_app(cookie: str = "session", mimetype: str = "text/html", host: str | None = None) -> Flask:
    """A redirect to an absolute URL (the host and port asked on, or `host`, as a proxy passing another Host would
    make it), and a page that links to itself absolutely and sets a cookie of a new value each time."""
    app = Flask(f"visitor-{cookie}-{mimetype}-{host}")

    @app.get("/go")
    def go() -> Response:
        return redirect(f"http://{host}/page" if host else url_for("page", _external=True))

    @app.get("/page")
    def page() -> Response:
        answer = make_response(f'<a href="{url_for("page", _external=True)}">this page</a>')
        answer.mimetype = mimetype
        answer.set_cookie(cookie, secrets.token_hex(8))
        return answer

    return app


def test_the_headers_a_visitor_meets_are_compared() -> None:
    """Location, with the host and port each server is asked on marked; the cookies' names; Content-Type. Each way
    is asked on its own port here, as on its own address and Nginx's port in the mode."""
    asked = [spec("GET", "/go"), RequestSpec(4, "GET", "/page", (), b"", None, 1)]
    rounds = []
    for _ in range(2):
        with serving(visitor_app()) as port:
            rounds.append(reference_round(port, asked, f"127.0.0.1:{port}"))
    expected = expected_answers(asked, rounds)
    location = expected[0].parts["header Location"]
    assert location and location.literal_parts == (b"http://<host>/page",)
    with serving(visitor_app()) as port:
        assert first_difference(port, expected, f"127.0.0.1:{port}") is None
        # Asked on another host and port, as behind Nginx: the redirect and the link name that one, marked too.
        assert first_difference(port, expected, "10.0.0.9:8080") is None
    with serving(visitor_app(host="127.0.0.1")) as port:  # the port lost on the way
        found = first_difference(port, expected, f"127.0.0.1:{port}") or ""
        assert found.startswith(
            "line 1, GET /go: header Location differs at byte 7, after b'http://': expected b'<host>/page', got "
            "b'127.0.0.1/page' (a URL made from the Host header differs where the way, or Nginx before it, passes on "
            "another host; "
        ), found
    with serving(visitor_app(cookie="sid")) as port:
        found = first_difference(port, expected, f"127.0.0.1:{port}") or ""
        assert found.startswith(
            "line 4, GET /page: header Set-Cookie differs at byte 1, after b's': expected b'ession', got b'id' ("
        ), found
    with serving(visitor_app(mimetype="text/plain")) as port:
        found = first_difference(port, expected, f"127.0.0.1:{port}") or ""
        assert found.startswith("line 4, GET /page: header Content-Type differs at byte 5, after b'text/': "), found


HTML = (("Content-Type", "text/html; charset=utf-8"),)


def test_the_differing_line_says_which_part_where_and_what_to_do() -> None:
    request = RequestSpec(7, "GET", "/me", (), b"", None, 1)
    host = "127.0.0.1:3000"
    answers = [Answer(200, b"<p>Last seen %b by ada</p>" % at, HTML).parts(host) for at in (b"10:00:01", b"10:00:04")]
    expected = expected_answers([request], [[(AnswerParts(200, answers[0]), AnswerParts(200, answers[1]))]])[0]
    advice = (
        "if it depends on time or on state, what SETUP made or the requests before it changed, send a request whose "
        "answer does not, or leave this one out of the requests file"
    )
    way = Answer(200, b"<p>Last seen 11:42:00 by bob</p>", HTML).parts("10.0.0.2:8080")
    assert difference(expected, AnswerParts(200, way)) == (
        f"line 7, GET /me: body differs at byte 25, after b'<p>Last seen 11:42:00 by ': expected b'ada</p>', got "
        f"b'bob</p>' ({advice})"
    )
    assert difference(expected, AnswerParts(500, way)) == (
        f"line 7, GET /me: status differs: expected 200, got 500 ({advice})"
    )
    assert difference(expected, AnswerParts(0, Answer(0, b"").parts(host))) == (
        f"line 7, GET /me: status differs: expected 200, got no answer ({advice})"
    )
    bare = Answer(200, b"<p>Last seen 11:42:00 by ada</p>").parts(host)
    assert difference(expected, AnswerParts(200, bare)) == (
        f"line 7, GET /me: header Content-Type differs: expected b'text/html; charset=utf-8', got none ({advice})"
    )
    redirected = Answer(200, b"<p>Last seen 11:42:00 by ada</p>", (*HTML, ("Location", "/login"))).parts(host)
    assert difference(expected, AnswerParts(200, redirected)) == (
        f"line 7, GET /me: header Location differs: expected none, got b'/login' (a URL made from the Host header "
        f"differs where the way, or Nginx before it, passes on another host; {advice})"
    )


def test_a_request_the_reference_answers_with_two_statuses_stops_the_run_in_one_line() -> None:
    """Its answer depends on state: no way can be compared with it. Said with every status it gave."""
    request = RequestSpec(4, "POST", "/register", (), b"name=ada", None, 1)
    created, taken = AnswerParts(302, {}), AnswerParts(200, {})
    with pytest.raises(ValueError) as raised:
        expected_answers([request], [[(created, taken)], [(created, taken)]])
    assert str(raised.value) == (
        "line 4, POST /register: the development server gave status 200, expected 302 (its answers, twice after "
        "each of 2 set-ups: 302, 200, 302, 200; a status that depends on what SETUP made or the requests before it "
        "changed: send one that does not)"
    )
    expecting = RequestSpec(4, "POST", "/register", (), b"name=ada", 201, 1)
    with pytest.raises(ValueError, match=r"gave status 302, expected 201 \(the file's # expect:; if 302 is right"):
        expected_answers([expecting], [[(created, created)]])


CASES = Path(__file__).parent / "yourapp_cases"
# python-dotenv's two functions that `flask run` calls to read .flaskenv and .env: the app's image installs the
# real one (flaskenv_json's requirements), this venv has none.
DOTENV_STAND_IN = """\
import os


def find_dotenv(filename=".env", usecwd=False):
    path = os.path.join(os.getcwd(), filename)
    return path if os.path.isfile(path) else ""


def dotenv_values(path, encoding="utf-8"):
    with open(path, encoding=encoding) as file:
        return dict(line.strip().split("=", 1) for line in file if "=" in line and not line.startswith("#"))
"""


def test_the_reference_reads_no_flaskenv_and_serves_the_app_as_the_ways_do(tmp_path: Path) -> None:
    """flaskenv_json's .flaskenv says FLASK_DEBUG=1, which `flask run` reads: its JSON came pretty-printed, every
    way's compact. The devserver's command, run as compose.yml runs it (sh, the app's folder, yourapp_entry on the
    path), serves compact JSON and says the app is not in debug mode."""
    case = CASES / "flaskenv_json"
    assert "FLASK_DEBUG=1" in (case / ".flaskenv").read_text()
    (tmp_path / "dotenv.py").write_text(DOTENV_STAND_IN)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    reference = next(way for way in yourapp_ways.ways() if way.reference)
    command = reference.command.replace("0.0.0.0", "127.0.0.1").replace("3000", str(port))
    search_path = os.pathsep.join([str(tmp_path), str(Path(__file__).parent.parent / "yourapp"), str(case)])
    environment = {**os.environ, "PYTHONPATH": search_path, "YOURAPP_CALLABLE": "app:app",
                   "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}  # fmt: skip
    for name in ("FLASK_DEBUG", "FLASK_SKIP_DOTENV", "FLASK_APP"):
        environment.pop(name, None)
    server = subprocess.Popen(["sh", "-c", f"exec {command}"], cwd=case, env=environment, stderr=subprocess.PIPE,
                              text=True, start_new_session=True)  # fmt: skip
    try:
        deadline = time.monotonic() + 20
        answer = yourapp_checks.ask(port, spec("GET", "/api/items"), timeout=2)
        while answer.status == 0 and time.monotonic() < deadline and server.poll() is None:
            time.sleep(0.2)
            answer = yourapp_checks.ask(port, spec("GET", "/api/items"), timeout=2)
    finally:
        os.killpg(server.pid, signal.SIGTERM)  # its own session: a reloader's child with it
        said = server.communicate(timeout=10)[1]
    assert answer.status == 200, said
    assert answer.body.startswith(b'{"count":3,"items":[{"id":1,"name":"green tea"'), answer.body[:80]
    assert "yourapp reference: debug False" in said, said


def test_each_sample_counts_for_its_innermost_frame_that_names_a_class() -> None:
    """The playground's classes, the app's own package, any other package by its name; native code only left out."""
    site = "/usr/local/lib/python3.14/site-packages"
    collapsed = "\n".join([
        f'process 1:"gunicorn";handle ({site}/gunicorn/workers/base.py:50);login (/app/flaskr/auth.py:98);'
        f"check_password_hash ({site}/werkzeug/security.py:120) 6",
        f'process 1:"gunicorn";handle ({site}/gunicorn/workers/base.py:50);index (/app/flaskr/blog.py:20) 3',
        f'process 1:"gunicorn";loads ({site}/itsdangerous/serializer.py:10) 1',
        'process 1:"gunicorn";thread 7 4',  # no Python frame: not counted
    ])  # fmt: skip
    found, samples = yourapp_load.app_shares(collapsed)
    assert samples == 10
    # Werkzeug's frame is the innermost: the playground's class for it, before the app's frame that called it.
    assert found == {"Flask and Werkzeug": 0.6, "the app: flaskr": 0.3, "itsdangerous": 0.1}
    assert yourapp_load.app_shares("") == ({}, 0)


def test_a_blocked_greenlet_s_stack_keeps_the_app_s_frame_however_deep_the_call_under_it() -> None:
    """gevent's monitor report: where the fix goes is the app's innermost frame, kept in the stack shown even when
    twenty frames of a library's own sit below it."""
    library = [f'  File "/usr/local/lib/python3.14/site-packages/lib/m{n}.py", line {n}, in f{n}' for n in range(20)]
    report = "\n".join([
        "=" * 40,
        "+--- <Greenlet at 0x7f: handle> appears to be blocked",
        '  File "/usr/local/lib/python3.14/site-packages/gunicorn/workers/base.py", line 50, in handle',
        '  File "/app/flaskr/auth.py", line 98, in login',
        *library,
        "=" * 40,
    ])  # fmt: skip
    found = yourapp_checks.blocked_greenlets("starting\n" + report)
    assert found.reports == 1 and found.where == "/app/flaskr/auth.py:98 in login"
    assert found.stack[0] == found.where and found.stack[-1].endswith("m19.py:19 in f19") and len(found.stack) == 21
    assert yourapp_checks.blocked_greenlets("no report here") == yourapp_checks.Blocked(0, None, [])


def test_the_blocked_place_kept_is_the_one_reported_most_often() -> None:
    """A one-off hold first (an import at the first request), then the load's own cause three times: the page shows
    the latter, with every report counted."""

    def report(*frames: tuple[str, int, str]) -> str:
        lines = [f'  File "{path}", line {line}, in {function}' for path, line, function in frames]
        return "\n".join(["=" * 40, "+--- <Greenlet at 0x7f: handle> appears to be blocked", *lines, "=" * 40])

    site = "/usr/local/lib/python3.14/site-packages"
    handle = (f"{site}/gunicorn/workers/base.py", 50, "handle")
    once = report(handle, (f"{site}/jinja2/environment.py", 10, "compile"))
    often = report(handle, (f"{site}/werkzeug/security.py", 120, "check_password_hash"))
    found = yourapp_checks.blocked_greenlets("\n".join([once, often, "served", often, often]))
    assert found.reports == 4 and found.where == f"{site}/werkzeug/security.py:120 in check_password_hash", found
    assert found.stack[-1] == found.where, found


def test_an_unknown_way_is_one_line_before_anything_is_built(capsys: pytest.CaptureFixture[str]) -> None:
    from bench.modes.yourapp import run as mode

    with pytest.raises(SystemExit, match=r"^unknown way no-such-way; choose among: .*gunicorn-threads"):
        app = Path(__file__).parent / "yourapp_app"
        mode.main(["--app", str(app), "--requests", str(app / "requests.txt"), "--ways", "no-such-way"])
    assert "building" not in capsys.readouterr().out
