"""A requests file in vegeta's targets format read into a mix and written as vegeta's JSON targets, and the masked
comparison of an answer with the development server's: real files in tmp_path, no Docker."""

from __future__ import annotations

import base64
import json
import random
import time
from collections import Counter
from pathlib import Path

import pytest

from bench.loadgen.vegeta_targets import RequestsFileError, RequestSpec, read_requests, vegeta_json_targets
from bench.measure import yourapp_checks, yourapp_load
from bench.measure.answer_match import mask, same_answer

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
    assert [json.loads(line)["url"] for line in lines] == ["http://web:8000/" + name for name in "aaba"]
    lines = vegeta_json_targets([a, b, c], "http://web:8000").splitlines()
    targets = [json.loads(line)["url"][-1] for line in lines]
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
    assert post["method"] == "POST" and post["url"] == "http://web:8000/api?x=1"
    assert post["header"] == {"X-Trace": ["a", "b"], "Content-Type": ["application/octet-stream"]}
    assert base64.b64decode(post["body"], validate=True) == body
    assert get == {"method": "GET", "url": "http://web:8000/"}


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
    assert (masked.masked, masked.stable_bytes) == (2, len(FIRST) - 40 - len("06-03 10:00:01"))


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


def test_an_unknown_way_is_one_line_before_anything_is_built(capsys: pytest.CaptureFixture[str]) -> None:
    from bench.modes import yourapp as mode

    with pytest.raises(SystemExit, match=r"^unknown way no-such-way; choose among: .*gunicorn-threads"):
        app = Path(__file__).parent / "yourapp_app"
        mode.main(["--app", str(app), "--requests", str(app / "requests.txt"), "--ways", "no-such-way"])
    assert "building" not in capsys.readouterr().out
