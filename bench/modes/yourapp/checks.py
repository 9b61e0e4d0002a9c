"""What `make yourapp` checks of the reader's app besides its speed: that each way answers every request of the
requests file as Flask's development server does (verified before it is loaded: the status, the headers a visitor
sees and the body), the C libraries among the app's requirements that gevent cannot patch (before the run), and the
greenlets gevent's own monitor caught holding the event loop (during the load)."""

from __future__ import annotations

import http.client
import re
from collections import Counter
from dataclasses import dataclass

from bench.loadgen.vegeta_targets import RequestSpec
from bench.modes.yourapp.answer_match import AnswerMask, mask, shown

# The headers compared besides the status and the body: the ones the app sets and every server passes on as they
# are, whose difference a visitor meets (a redirect elsewhere, another type, a cookie not set, other caching). Of
# Set-Cookie, the cookies' names only: their values (a session signed with its time) differ at every answer.
COMPARED_HEADERS = ("Location", "Content-Type", "Set-Cookie", "Cache-Control", "Vary")
# Each way is asked on the host and port the load reaches it on, which differ from way to way (Nginx's port, each
# network's address); where the app writes them back (an absolute redirect, an absolute link) they are this mark.
HOST_MARK = b"<host>"
SHOWN_BEFORE = 30  # bytes of the answer shown before the byte where it differs


@dataclass(frozen=True)
class Answer:
    status: int
    body: bytes
    headers: tuple[tuple[str, str], ...] = ()

    def parts(self, host: str) -> dict[str, bytes | None]:
        """What is compared of it besides its status: each of COMPARED_HEADERS (None where it has none), then the
        body; `host`, the host and port it was asked on, written HOST_MARK in each."""
        found: dict[str, bytes | None] = {}
        for name in COMPARED_HEADERS:
            values = [value for key, value in self.headers if key.lower() == name.lower()]
            if name == "Set-Cookie":
                values = sorted(value.split("=", 1)[0].strip() for value in values)
            # http.client reads header values as Latin-1: encoded back, they are the bytes that came.
            found[f"header {name}"] = ", ".join(values).encode("latin-1", "replace") if values else None
        found["body"] = self.body
        if not host:
            return found
        marked = host.encode()
        return {part: None if value is None else value.replace(marked, HOST_MARK) for part, value in found.items()}


def ask(port: int, request: RequestSpec, host: str | None = None, timeout: float = 30) -> Answer:
    """One request of the file to 127.0.0.1:port, on a connection of its own, with `host` as its Host unless the
    file gives one (127.0.0.1:port by default); status 0 where no answer came."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        headers = dict(request.headers)
        if not any(name.lower() == "host" for name in headers):
            headers["Host"] = host or f"127.0.0.1:{port}"
        connection.request(request.method, request.target, body=request.body or None, headers=headers)
        answer = connection.getresponse()
        return Answer(answer.status, answer.read(), tuple(answer.getheaders()))
    except (OSError, http.client.HTTPException):
        return Answer(0, b"")
    finally:
        connection.close()


@dataclass(frozen=True)
class AnswerParts:
    """One answer as it is compared: its status, and its parts (Answer.parts) with the host it was asked on marked."""

    status: int
    parts: dict[str, bytes | None]


def asked(port: int, request: RequestSpec, host: str) -> AnswerParts:
    answer = ask(port, request, host)
    return AnswerParts(answer.status, answer.parts(host))


def reference_round(port: int, requests: list[RequestSpec], host: str) -> list[tuple[AnswerParts, AnswerParts]]:
    """One fresh development server's answers: each request of the file asked twice in a row, in the file's order."""
    return [(asked(port, request, host), asked(port, request, host)) for request in requests]


@dataclass(frozen=True)
class Expected:
    """What the development server answered to one request, asked twice in each of its fresh set-ups: its status,
    and each part (a compared header, the body) masked where its answers differ; None for a header none of them had.
    A header only some of them had is not compared."""

    request: RequestSpec
    status: int
    parts: dict[str, AnswerMask | None]

    @property
    def masked(self) -> int:
        return sum(part.masked for part in self.parts.values() if part)


def expected_answers(
    requests: list[RequestSpec], rounds: list[list[tuple[AnswerParts, AnswerParts]]]
) -> list[Expected]:
    """The expected answers from the reference's rounds (reference_round, one per set-up). A request it does not
    answer with the status the file expects, or with the same status every time, is the file's or the app's
    problem, not a way's: ValueError, in one line."""
    expected = []
    for index, request in enumerate(requests):
        answers = [answer for found in rounds for answer in found[index]]
        wanted = request.expect or answers[0].status
        statuses = [answer.status for answer in answers]
        if any(status != wanted for status in statuses):
            raise ValueError(reference_status_problem(request, wanted, statuses))
        masks: dict[str, AnswerMask | None] = {}
        for part in answers[0].parts:
            values = [value for answer in answers if (value := answer.parts.get(part)) is not None]
            if not values:
                masks[part] = None
            elif len(values) == len(answers):
                masks[part] = mask(*values)
        expected.append(Expected(request, wanted, masks))
    return expected


def reference_status_problem(request: RequestSpec, wanted: int, statuses: list[int]) -> str:
    got = next(status for status in statuses if status != wanted)
    said = f"status {got}" if got else "no answer"
    problem = f"line {request.line}, {request.name}: the development server gave {said}, expected {wanted}"
    if len(set(statuses)) > 1:
        return (
            f"{problem} (its answers, twice after each of {len(statuses) // 2} set-ups: "
            f"{', '.join(map(str, statuses))}; a status that depends on what SETUP made or the requests before it "
            "changed: send one that does not)"
        )
    if request.expect and got:
        return f"{problem} (the file's # expect:; if {got} is right for this request, expect {got})"
    return problem


# What the reader can do about a difference the masks let through: the reference's answers agreed on that part,
# a way's did not.
ADVICE = (
    "if it depends on time or on state, what SETUP made or the requests before it changed, send a request whose "
    "answer does not, or leave this one out of the requests file"
)
LOCATION_ADVICE = "a URL made from the Host header differs where the way, or Nginx before it, passes on another host"


def difference(expected: Expected, answer: AnswerParts) -> str | None:
    """None when the answer is the reference's, its masks aside; else its first difference in one line: the request's
    line and name, the part (status, a header, the body), the byte and what comes before it, and what to do."""
    where = f"line {expected.request.line}, {expected.request.name}"
    if answer.status != expected.status:
        got = answer.status or "no answer"
        return f"{where}: status differs: expected {expected.status}, got {got} ({ADVICE})"
    for part, wanted in expected.parts.items():
        value = answer.parts.get(part)
        advice = f"{LOCATION_ADVICE}; {ADVICE}" if part == "header Location" else ADVICE
        if wanted is None:
            if value is not None:
                return f"{where}: {part} differs: expected none, got {shown(value)} ({advice})"
            continue
        found = wanted.mismatch(b"" if value is None else value)
        if found is None:
            continue
        if value is None:
            return f"{where}: {part} differs: expected {shown(found.expected)}, got none ({advice})"
        before = value[max(0, found.at - SHOWN_BEFORE) : found.at]
        after = f", after {before!r}" if before else ""
        return (
            f"{where}: {part} differs at byte {found.at}{after}: expected {shown(found.expected)}, "
            f"got {shown(found.got)} ({advice})"
        )
    return None


def first_difference(port: int, expected: list[Expected], host: str) -> str | None:
    """None when the way answers every request as the reference did, else its first difference in one line."""
    for reference in expected:
        found = difference(reference, asked(port, reference.request, host))
        if found:
            return found
    return None


@dataclass(frozen=True)
class Blocked:
    """What gevent's monitor reported: how many times a greenlet held the loop past the limit, and the place it was
    held most often, with that place's stack, innermost frames last."""

    reports: int
    where: str | None
    stack: list[str]


SHOWN_FRAMES = 12


def report_stack(report: str) -> tuple[str | None, list[str]]:
    """One monitor report's place, the innermost frame of the app's own code (where the fix goes) or else of any, and
    its last frames, down from that place at least, however deep the call under it."""
    frames = re.findall(r'File "([^"]+)", line (\d+), in (\S+)', report)
    # One report can print the same frames more than once (the greenlet's, then the thread's): each once, in order.
    stack = list(dict.fromkeys(f"{path}:{line} in {function}" for path, line, function in frames))
    own = [frame for frame in stack if frame.startswith("/app/")]
    innermost = (own or stack)[-1] if stack else None
    start = min(stack.index(innermost), max(0, len(stack) - SHOWN_FRAMES)) if innermost else 0
    return innermost, stack[start:]


def blocked_greenlets(logs: str) -> Blocked:
    """gevent's monitor reports in the app's logs (GEVENT_MONITOR_THREAD_ENABLE, yourapp/compose.yml): each opens
    with a line of "=" and "... appears to be blocked", then the greenlet's stack, `File "...", line N, in f` lines.
    The place reported most often is kept (the first of equals), not the first report's: a start-up's one-off work
    can hold the loop once before the load's own cause does so again and again."""
    blocks = re.split(r"^.*?={20,}\s*$", logs, flags=re.MULTILINE)
    reports = [report_stack(block) for block in blocks if "appears to be blocked" in block]
    if not reports:
        return Blocked(0, None, [])
    places = Counter(where for where, _ in reports)
    where, stack = next(report for report in reports if places[report[0]] == max(places.values()))
    return Blocked(len(reports), where, stack)
