"""Hostile HTTP at the byte level: the request line, the framing and the connection itself, sent raw.

tests/hostile_http.py keeps every request well formed and puts the hostility in its content; these are the
requests a broken client, a fuzzer or a smuggling attempt sends: bytes that are not UTF-8 or not text at all
where a server might decode them (method, path, version, header names), bad and NUL percent-escapes,
chunked bodies (good and broken), Content-Length beside Transfer-Encoding, HTTP/1.0 with and without Host,
pipelined requests, unknown methods, obsolete line folding and bare LF line ends.

A case is a fixed list of bytes, not a generated one: each is a class of its own, and it must reach every
target of every scenario on every run. What an answer may be:
- `VALID`: a request any server must serve: a 2xx.
- `REFUSABLE`: a request a server may serve or refuse: a 2xx, a 4xx, a 501 for a method it does not
  implement or a 505 for a version it does not support (RFC 9110, 15.6.2 and 15.6.6: the two 5xx that refuse the
  request, not report a failure), or the connection closed without an answer; never another 5xx, a traceback or
  silence until the timeout.
Afterwards the target must still serve a plain request. Cases that leave a request half-sent (INCOMPLETE) wait
INCOMPLETE_SECONDS for an answer, and silence until then is allowed: a server may wait for the rest.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from urllib.parse import urlsplit

import pytest

from tests.hostile_http import CRASH_MARKERS, exchange

VALID = "valid"
REFUSABLE = "refused or served"


@dataclass(frozen=True)
class FramingCase:
    name: str
    payload: bytes  # every byte on the wire; {host} is replaced with the target's host:port
    expect: str  # VALID or REFUSABLE
    answers: int = 1  # how many answers a VALID case gets on its connection (2 for a pipeline)


def _request(line: bytes, *headers: bytes, body: bytes = b"", host: bool = True) -> bytes:
    """A request with our Host header (unless host=False) and `Connection: close` last."""
    lines = [line, *([b"Host: {host}"] if host else []), *headers, b"Connection: close"]
    return b"\r\n".join(lines) + b"\r\n\r\n" + body


def _get(target: bytes, *headers: bytes, version: bytes = b"HTTP/1.1", host: bool = True) -> bytes:
    return _request(b"GET " + target + b" " + version, *headers, host=host)


def _post(*headers: bytes, body: bytes, version: bytes = b"HTTP/1.1") -> bytes:
    return _request(b"POST {path} " + version, *headers, body=body)


CHUNKED = b"Transfer-Encoding: chunked"
CHUNKS = b"5\r\nhello\r\n0\r\n\r\n"
JSON = b"Content-Type: application/json"
FORM = b"Content-Type: application/x-www-form-urlencoded"
# The first request of a pipeline: kept alive, our Host, its own headers still to come.
KEPT_GET = b"GET {path} HTTP/1.1\r\nHost: {host}\r\n\r\n"
KEPT_POST = b"POST {path} HTTP/1.1\r\nHost: {host}\r\n"
SMUGGLED = CHUNKED + b"\r\n\r\n0\r\n\r\nX"  # the end of a chunked body, or 6 bytes of a sized one
CLOSING_GET = b"GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"
# {path} is a request the app serves (the tutorial's `/?delay=0`, the bookstore's `/author?limit=1&offset=0`), {dir}
# the folder of a path it routes (`/`, `/author/`), {parameter} a parameter it reads, {host} the target's host:port.
# A path of odd bytes is one the app refuses (404) or serves, whichever the server passes on: a 5xx is the server or
# the app failing on bytes it could not decode.
CASES: tuple[FramingCase, ...] = (
    # Text that is not UTF-8, or not text, where a server or the app decodes it.
    FramingCase("path raw non-UTF-8", _get(b"{dir}\xff\xfe?delay=0"), REFUSABLE),
    FramingCase("path %-encoded non-UTF-8", _get(b"{dir}%ff%fe?delay=0"), REFUSABLE),
    FramingCase("path overlong UTF-8 of /", _get(b"{dir}%c0%af?delay=0"), REFUSABLE),
    FramingCase("path lone surrogate", _get(b"{dir}%ed%a0%80?delay=0"), REFUSABLE),
    FramingCase("path NUL escape", _get(b"{dir}%00?delay=0"), REFUSABLE),
    FramingCase("path raw NUL", _get(b"{dir}\x00?delay=0"), REFUSABLE),
    FramingCase("path bad escape", _get(b"{dir}%zz?delay=0"), REFUSABLE),
    FramingCase("path truncated escape", _get(b"{dir}%?delay=0"), REFUSABLE),
    FramingCase("query NUL escape", _get(b"{path}%00"), REFUSABLE),
    FramingCase("query raw non-UTF-8", _get(b"{path}&x=\xff\xfe"), REFUSABLE),
    FramingCase("query %-encoded non-UTF-8", _get(b"{path}&x=%ff%fe"), REFUSABLE),
    FramingCase("read parameter raw non-UTF-8", _get(b"{parameter}=\xff\xfe"), REFUSABLE),
    FramingCase("read parameter %-encoded non-UTF-8", _get(b"{parameter}=%ff%fe"), REFUSABLE),
    FramingCase("read parameter raw Latin-1", _get(b"{parameter}=caf\xe9"), REFUSABLE),
    FramingCase("read parameter NUL", _get(b"{parameter}=\x00"), REFUSABLE),
    FramingCase("query truncated escape", _get(b"{path}&x=%"), REFUSABLE),
    FramingCase("path dot segments", _get(b"{dir}../../etc/passwd?delay=0"), REFUSABLE),
    FramingCase("absolute-form target", _get(b"http://{host}{path}"), REFUSABLE),
    FramingCase("asterisk target", _get(b"*"), REFUSABLE),
    FramingCase("header name non-UTF-8", _get(b"{path}", b"X-\xff\xfe: v"), REFUSABLE),
    FramingCase("header name with space", _get(b"{path}", b"X Bad: v"), REFUSABLE),
    FramingCase("space before colon", _get(b"{path}", b"X-Bad : v"), REFUSABLE),
    FramingCase("header without colon", _get(b"{path}", b"X-No-Colon"), REFUSABLE),
    FramingCase("obsolete line folding", _get(b"{path}", b"X-Folded: a", b" b"), REFUSABLE),
    FramingCase("header value NUL", _get(b"{path}", b"X-Nul: a\x00b"), REFUSABLE),
    FramingCase("Host non-UTF-8", _get(b"{path}", b"Host: \xff\xfe", host=False), REFUSABLE),
    FramingCase("two Hosts", _get(b"{path}", b"Host: a.example"), REFUSABLE),
    FramingCase("bare LF line ends", b"GET {path} HTTP/1.1\nHost: {host}\nConnection: close\n\n", REFUSABLE),
    # Methods.
    FramingCase("HEAD", _request(b"HEAD {path} HTTP/1.1"), VALID),
    FramingCase("unknown method", _request(b"FOO {path} HTTP/1.1"), REFUSABLE),
    FramingCase("lower-case method", _request(b"get {path} HTTP/1.1"), REFUSABLE),
    FramingCase("method non-UTF-8", _request(b"G\xffT {path} HTTP/1.1"), REFUSABLE),
    FramingCase("method of 300 bytes", _request(b"X" * 300 + b" {path} HTTP/1.1"), REFUSABLE),
    FramingCase("OPTIONS", _request(b"OPTIONS {path} HTTP/1.1"), REFUSABLE),
    FramingCase("TRACE", _request(b"TRACE {path} HTTP/1.1"), REFUSABLE),
    FramingCase("CONNECT", _request(b"CONNECT {host} HTTP/1.1"), REFUSABLE),
    FramingCase("DELETE", _request(b"DELETE {path} HTTP/1.1"), REFUSABLE),
    FramingCase("PROPFIND", _request(b"PROPFIND {path} HTTP/1.1"), REFUSABLE),
    # Versions.
    FramingCase("HTTP/1.0 with Host", _get(b"{path}", version=b"HTTP/1.0"), VALID),
    FramingCase("HTTP/1.0 without Host", _get(b"{path}", version=b"HTTP/1.0", host=False), VALID),
    FramingCase("HTTP/1.1 without Host", _get(b"{path}", host=False), REFUSABLE),
    FramingCase("HTTP/0.9", b"GET {path}\r\n\r\n", REFUSABLE),
    FramingCase("HTTP/2.0 in the request line", _get(b"{path}", version=b"HTTP/2.0"), REFUSABLE),
    FramingCase("HTTP/9.9", _get(b"{path}", version=b"HTTP/9.9"), REFUSABLE),
    FramingCase("version non-UTF-8", _get(b"{path}", version=b"HTTP/\xff.1"), REFUSABLE),
    FramingCase("no version", b"GET {path} \r\nHost: {host}\r\n\r\n", REFUSABLE),
    FramingCase("HTTP/2 preface", b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", REFUSABLE),
    FramingCase("TLS hello on plain HTTP", b"\x16\x03\x01\x00\x05\x01\x00\x00\x01\x00", REFUSABLE),
    # Bodies and their framing.
    FramingCase("GET with a body", _request(b"GET {path} HTTP/1.1", b"Content-Length: 5", body=b"hello"), VALID),
    FramingCase("POST chunked", _post(CHUNKED, body=b"5\r\nhello\r\n0\r\n\r\n"), REFUSABLE),
    FramingCase("POST non-UTF-8 JSON", _post(b"Content-Length: 4", JSON, body=b"\xff\xfe\xfd\xfc"), REFUSABLE),
    FramingCase("POST non-UTF-8 form", _post(b"Content-Length: 7", FORM, body=b"a=\xff%ff&"), REFUSABLE),
    FramingCase("chunk size not hex", _post(CHUNKED, body=b"zz\r\nhello\r\n0\r\n\r\n"), REFUSABLE),
    FramingCase("chunk size negative", _post(CHUNKED, body=b"-5\r\nhello\r\n0\r\n\r\n"), REFUSABLE),
    FramingCase("chunk size huge", _post(CHUNKED, body=b"f" * 20 + b"\r\nhello\r\n0\r\n\r\n"), REFUSABLE),
    FramingCase("chunk longer than its size", _post(CHUNKED, body=b"2\r\nhello\r\n0\r\n\r\n"), REFUSABLE),
    FramingCase("chunk extension", _post(CHUNKED, body=b"5;x=y\r\nhello\r\n0\r\n\r\n"), REFUSABLE),
    FramingCase("Transfer-Encoding unknown", _post(b"Transfer-Encoding: gzip", body=CHUNKS), REFUSABLE),
    FramingCase("Transfer-Encoding twice", _post(CHUNKED, b"Transfer-Encoding: identity", body=CHUNKS), REFUSABLE),
    FramingCase("Transfer-Encoding in HTTP/1.0", _post(CHUNKED, body=CHUNKS, version=b"HTTP/1.0"), REFUSABLE),
    FramingCase("Content-Length with Transfer-Encoding", _post(b"Content-Length: 4", CHUNKED, body=CHUNKS), REFUSABLE),
    FramingCase("two Content-Lengths", _post(b"Content-Length: 5", b"Content-Length: 6", body=b"hello!"), REFUSABLE),
    FramingCase("Content-Length not a number", _post(b"Content-Length: abc", body=b"hello"), REFUSABLE),
    FramingCase("Content-Length negative", _post(b"Content-Length: -5", body=b"hello"), REFUSABLE),
    FramingCase("Content-Length huge", _post(b"Content-Length: " + b"9" * 20, body=b"hello"), REFUSABLE),
    FramingCase("Content-Length with a plus", _post(b"Content-Length: +5", body=b"hello"), REFUSABLE),
    FramingCase("Expect 100-continue", _post(b"Expect: 100-continue", b"Content-Length: 5", body=b"hello"), REFUSABLE),
    # Connections.
    FramingCase("two pipelined GETs", KEPT_GET + CLOSING_GET, VALID, answers=2),
    FramingCase("pipelined after a body", KEPT_POST + b"Content-Length: 5\r\n\r\nhello" + CLOSING_GET, REFUSABLE),
    FramingCase("pipelined after chunks", KEPT_POST + CHUNKED + b"\r\n\r\n" + CHUNKS + CLOSING_GET, REFUSABLE),
    FramingCase("smuggled by CL.TE", KEPT_POST + b"Content-Length: 6\r\n" + SMUGGLED + CLOSING_GET, REFUSABLE),
    FramingCase("empty lines before the request", b"\r\n\r\n" + _get(b"{path}"), REFUSABLE),
    FramingCase("only a request line", b"GET {path} HTTP/1.1\r\n", REFUSABLE),
    FramingCase("garbage", b"\x00\x01\x02\xff\xfe\r\n\r\n", REFUSABLE),
)  # fmt: skip

ANSWER_TIMEOUT = 10.0  # seconds: every case asks for at most 0 s of waiting
# Where a server keeps a half-sent request open waiting for the rest (only a request line, a body shorter than its
# length), silence until this many seconds is what a server may do: it has nothing to answer yet.
INCOMPLETE_SECONDS = 2.0
INCOMPLETE = frozenset(
    {
        "only a request line",
        "chunk size huge",
        "Content-Length huge",
        "HTTP/0.9",
        "TLS hello on plain HTTP",
        "bare LF line ends",
        "HTTP/2 preface",  # a server that speaks HTTP/2 (granian) sends its settings and waits for the client's
    }
)


@dataclass(frozen=True)
class FramingAnswer:
    statuses: tuple[int, ...]  # each status line that came back, in order
    raw: bytes
    timed_out: bool
    seconds: float

    def describe(self, limit: int = 300) -> str:
        what = "timed out" if self.timed_out else "closed"
        return f"{list(self.statuses)}, {what} after {self.seconds:.2f} s, {len(self.raw)} bytes: {self.raw[:limit]!r}"


@dataclass(frozen=True)
class App:
    """What the cases ask of one app: a request it serves (with a query it reads), the folder of a path it routes,
    and the parameter it reads."""

    path: bytes
    folder: bytes
    parameter: bytes


TUTORIAL_APP = App(b"/?delay=0", b"/", b"/?delay")
BOOKSTORE_APP = App(b"/author?limit=1&offset=0", b"/author/", b"/author?limit")


def payload(case: FramingCase, app: App, host: str, port: int) -> bytes:
    filled = case.payload.replace(b"{path}", app.path).replace(b"{dir}", app.folder)
    filled = filled.replace(b"{parameter}", app.parameter)
    return filled.replace(b"{host}", f"{host}:{port}".encode())


def send_raw(host: str, port: int, payload: bytes, timeout: float | None = None, answers: int = 1) -> FramingAnswer:
    """Write the bytes, then read until the server closes, `answers` whole answers have come (a server may keep the
    connection open after a request it could not read to the end) or `timeout` passes."""
    head_only = payload.startswith(b"HEAD ")
    received, timed_out, seconds = exchange(
        host, port, payload, timeout or ANSWER_TIMEOUT, lambda came: whole_answers(came, head_only) >= answers
    )
    return FramingAnswer(tuple(read_answers(received, head_only)[0]), received, timed_out, seconds)


def read_answers(raw: bytes, head_only: bool = False) -> tuple[list[int], bool]:
    """The status of each final answer in the stream, in order (a 100 Continue is not one), and whether the last is
    whole: its head and, but after HEAD, the body its Content-Length gives. An answer without a length (chunked, or
    until the close) is not whole; what follows it is taken as its body."""
    statuses: list[int] = []
    rest = raw
    while rest:
        head, separator, body = rest.partition(b"\r\n\r\n")
        fields = head.split(b" ", 2)
        if len(fields) < 2 or not fields[0].startswith(b"HTTP/") or not fields[1].isdigit():
            return statuses, False
        if fields[1] == b"100":
            rest = body
            continue
        statuses.append(int(fields[1]))
        if not separator:
            return statuses, False
        lengths = [
            value.strip()
            for name, _, value in (line.partition(b":") for line in head.split(b"\r\n")[1:])
            if name.strip().lower() == b"content-length"
        ]
        length = b"0" if head_only else (lengths[0] if lengths else b"")
        if not length.isdigit() or len(body) < int(length):
            return statuses, False
        rest = body[int(length) :]
    return statuses, True


def whole_answers(raw: bytes, head_only: bool = False) -> int:
    statuses, last_whole = read_answers(raw, head_only)
    return len(statuses) if last_whole else len(statuses) - 1


# The two 5xx that refuse the request, not report a failure: a method the server does not implement (RFC 9110, 15.6.2)
# and an HTTP version it does not support (15.6.6).
REFUSING_5XX = {501, 505}


@dataclass(frozen=True)
class Problem:
    """Why an answer breaks its case's rule, and whether it was only late: nothing wrong came, nor a close, within
    the timeout (a check of time: beside other busy processes a server may answer later)."""

    reason: str
    late: bool = False


def problem(case: FramingCase, answer: FramingAnswer) -> Problem | None:
    """Why this answer breaks the rule for its case, or None when it is acceptable."""
    if any(marker in answer.raw for marker in CRASH_MARKERS):
        return Problem("a crash report in the answer")
    if case.expect == VALID:
        # A server may close a kept-alive connection after any answer (RFC 9112, 9.3.2: the client sends the rest
        # again), so a pipeline's later requests may go unanswered, but not with the connection left hanging.
        if not answer.statuses or not all(200 <= status < 300 for status in answer.statuses):
            return Problem(f"{case.answers} 2xx answer(s) expected")
        if len(answer.statuses) < case.answers and answer.timed_out:
            return Problem(
                f"{len(answer.statuses)} of {case.answers} answers, then no close within the timeout", late=True
            )
        return None
    if answer.timed_out and not answer.statuses and case.name not in INCOMPLETE:
        return Problem(f"no answer and no close within {ANSWER_TIMEOUT:g} s", late=True)
    wrong = [status for status in answer.statuses if not (200 <= status < 300 or 400 <= status < 500)]
    wrong = [status for status in wrong if status not in REFUSING_5XX]
    return Problem(f"status {wrong[0]}: a 2xx, a 4xx, a 501, a 505 or a close expected") if wrong else None


def failures(url: str, app: App, cases: tuple[FramingCase, ...] = CASES) -> list[tuple[str, bool]]:
    """Every case to one target, one after another (a server that holds one connection at a time must not see the
    next case queue behind a half-sent one): what each answer that breaks its rule was, and whether it was only late
    (nothing wrong came, nor a close, within the timeout), then whether a plain request is still served."""
    parts = urlsplit(url)
    host, port = parts.hostname or "127.0.0.1", parts.port or 80
    found = []
    for case in cases:
        timeout = INCOMPLETE_SECONDS if case.name in INCOMPLETE else ANSWER_TIMEOUT
        answer = send_raw(host, port, payload(case, app, host, port), timeout, case.answers)
        wrong = problem(case, answer)
        if wrong:
            found.append((f"{case.name}: {wrong.reason}; {answer.describe()}", wrong.late))
    plain = send_raw(host, port, _get(app.path).replace(b"{host}", f"{host}:{port}".encode()))
    if plain.statuses[:1] != (200,):
        found.append((f"a plain request afterwards: {plain.describe()}", plain.timed_out and not plain.statuses))
    return found


def assert_framing_answered(urls: dict[str, str], app: App, cases: tuple[FramingCase, ...] = CASES) -> None:
    """Every case to every target, the targets at once: each a 2xx where valid, else a 4xx, a 501 or a close. A wrong
    answer fails at once (pytest.fail); answers only late fail as an assertion, a check of time that a test made
    again where the other parts had the CPU (tests/cpu_share.py) may make again."""
    with ThreadPoolExecutor(max_workers=len(urls)) as pool:
        found = dict(zip(urls, pool.map(lambda url: failures(url, app, cases), urls.values()), strict=True))
    wrong = [f"{name}: {line}" for name, lines in found.items() for line, late in lines if not late]
    late = [f"{name}: {line}" for name, lines in found.items() for line, late in lines if late]
    if wrong:
        pytest.fail("\n".join(wrong + late), pytrace=False)
    assert not late, "\n".join(late)
