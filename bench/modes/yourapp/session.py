"""What `make yourapp` does around a load besides timing it: the requests file's `# login`, sent once to a way, whose
cookies the requests after it carry; each write of the mix sent once before a load with a mark of its own, and after
the load every acknowledged write's mark looked up on its page (acknowledged is stored, or the way lost a write);
and SQLite's "database is locked" counted in the app's log, per request it failed.

Its requests go through the way's published port with the Host the load reaches the way on, as the verification's
do (checks.ask)."""

from __future__ import annotations

import http.client
import re
from collections import Counter
from dataclasses import dataclass
from typing import Any

from bench.loadgen.vegeta_targets import RequestSpec, labels, marks_in, request_of, with_session, write_mark
from bench.modes.yourapp.record import SAID_ERRORS

LOOKUP_TIMEOUT = 60  # a page that lists every write of the run (flaskr's front page) grows with each load
# Flask logs an unhandled exception as `Exception on /create [POST]`, its traceback under it (Flask.log_exception).
_FLASK_EXCEPTION = re.compile(r"^.*Exception on (\S+) \[([A-Z]+)\]", re.MULTILINE)
LOCKED = "database is locked"  # sqlite3.OperationalError's, where a writer waited out its timeout for the lock


@dataclass(frozen=True)
class Reply:
    status: int  # 0 where no answer came
    body: bytes
    set_cookies: list[str]


def send(port: int, request: RequestSpec, host: str, timeout: float = 30) -> Reply:
    """One request to 127.0.0.1:port on a connection of its own, `host` its Host unless the file gives one."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    headers = dict(request.headers)
    if not any(name.lower() == "host" for name in headers):
        headers["Host"] = host
    try:
        connection.request(request.method, request.target, body=request.body or None, headers=headers)
        answer = connection.getresponse()
        return Reply(answer.status, answer.read(), answer.headers.get_all("Set-Cookie") or [])
    except (OSError, http.client.HTTPException):
        return Reply(0, b"", [])
    finally:
        connection.close()


def cookie_header(set_cookies: list[str]) -> str:
    """The Cookie header a browser sends back after these Set-Cookie headers: each cookie's name=value, a later one
    of a name replacing an earlier, one they delete (Max-Age=0, as Flask clears a session) left out. Its Path and
    Domain are not looked at: every request after the login carries every cookie."""
    jar: dict[str, str] = {}
    for line in set_cookies:
        pair, _, attributes = line.partition(";")
        name, equals, value = pair.partition("=")
        if not equals or not name.strip():
            continue
        jar.pop(name.strip(), None)
        if not re.search(r"(?:^|;)\s*max-age\s*=\s*(?:0+|-[0-9]+)\s*(?:;|$)", attributes, re.IGNORECASE):
            jar[name.strip()] = value.strip()
    return "; ".join(f"{name}={value}" for name, value in jar.items())


@dataclass(frozen=True)
class Session:
    """One way's login: the Cookie header it gave (None for a file without a login) and the mix, the requests after
    the login carrying it."""

    cookie: str | None
    mix: list[RequestSpec]


def log_in(port: int, requests: list[RequestSpec], host: str) -> Session:
    """The file's `# login` sent once; ValueError, in one line, where it did not answer as asked or set no cookie.
    Without an `# expect:`, any 2xx or 3xx is a login: an app that answers a wrong password with its form and a 200
    (flaskr does) needs one to tell them apart."""
    login = next((spec for spec in requests if spec.login), None)
    if login is None:
        return Session(None, with_session(requests, None))
    reply = send(port, login, host)
    where = f"line {login.line}, {login.name} (# login)"
    if reply.status == 0:
        raise ValueError(f"{where}: no answer")
    if login.expect and reply.status != login.expect:
        raise ValueError(f"{where}: status {reply.status}, expected {login.expect}")
    if not login.expect and not 200 <= reply.status < 400:
        raise ValueError(f"{where}: status {reply.status}, expected a 2xx or 3xx (or the one its # expect: says)")
    cookie = cookie_header(reply.set_cookies)
    if not cookie:
        raise ValueError(f"{where}: status {reply.status} but no cookie set")
    return Session(cookie, with_session(requests, cookie))


def send_samples(port: int, host: str, session: Session, statuses: dict[int, int], token: str) -> dict[int, str]:
    """Each write of the mix sent once before the load, with its mark number 0: its page must show it afterwards,
    and the times it shows there are the times one write shows. What went wrong, by the write's line."""
    problems = {}
    for spec in session.mix:
        if spec.lookup:
            reply = send(port, spec.marked(write_mark(token, spec.line, 0)), host)
            if reply.status != statuses[spec.line]:
                got = f"status {reply.status}" if reply.status else "no answer"
                problems[spec.line] = f"the write sent before the load got {got}, expected {statuses[spec.line]}"
    return problems


def acknowledged(results: list[dict[str, Any]], statuses: dict[int, int]) -> Counter[str]:
    """How many times each write's mark got its expected status under load, from vegeta's results."""
    counted: Counter[str] = Counter()
    for result in results:
        found = request_of(result["url"])
        if found and found[1] and result["code"] == statuses.get(found[0]):
            counted[found[1]] += 1
    return counted


def _line_of(mark: str) -> int:
    return int(mark.split("-")[1])  # the token is hex: its line is the second part (write_mark)


def look_up(
    port: int, host: str, session: Session, token: str, counted: Counter[str], problems: dict[int, str]
) -> dict[str, dict[str, Any]]:
    """Per write of the mix (by its label): its page asked once after the load, each mark's writes found there (its
    count over the sample's) against those acknowledged under load."""
    names = labels(session.mix)
    headers = (("Cookie", session.cookie),) if session.cookie else ()
    pages: dict[str, Reply] = {}
    found: dict[str, dict[str, Any]] = {}
    for spec in session.mix:
        if not spec.lookup:
            continue
        mine = {mark: count for mark, count in counted.items() if _line_of(mark) == spec.line}
        entry: dict[str, Any] = {"lookup": spec.lookup, "acknowledged": sum(mine.values())}
        if spec.lookup not in pages:
            page = RequestSpec(0, "GET", spec.lookup, headers, b"", None, 1)
            pages[spec.lookup] = send(port, page, host, timeout=LOOKUP_TIMEOUT)
        reply = pages[spec.lookup]
        shown = marks_in(reply.body.decode(errors="replace"), token)
        per_write = shown.pop(write_mark(token, spec.line, 0), 0)
        problem = problems.get(spec.line)
        if not problem and reply.status != 200:
            problem = f"its page {spec.lookup} answered {reply.status or 'nothing'}"
        if not problem and not per_write:
            problem = f"its page {spec.lookup} does not show the write sent before the load"
        if problem:
            found[names[spec.line]] = entry | {"problem": problem}
            continue
        stored = {mark: count // per_write for mark, count in shown.items() if _line_of(mark) == spec.line}
        found[names[spec.line]] = entry | {
            "found": sum(stored.values()),
            "lost": sum(max(0, count - stored.get(mark, 0)) for mark, count in mine.items()),
            "found_unacknowledged": sum(max(0, count - mine.get(mark, 0)) for mark, count in stored.items()),
        }
    return found


# The last line of a Python traceback: the exception's class and message, at the start of its line.
_EXCEPTION_LINE = re.compile(r"^([A-Za-z_][\w.]*(?:Error|Exception)): (.*)$", re.MULTILINE)


def _failed_requests(logs: str) -> tuple[str, list[tuple[str, str]]]:
    """The log split where Flask logs a failed request ("Exception on /create [POST]"): what comes before the first,
    then per failed request its name ("POST /create") and its part of the log, traceback and all."""
    heads = list(_FLASK_EXCEPTION.finditer(logs))
    ends = [head.start() for head in heads[1:]] + [len(logs)] * bool(heads)
    before = logs[: heads[0].start() if heads else len(logs)]
    return before, [(f"{head[2]} {head[1]}", logs[head.start() : end]) for head, end in zip(heads, ends, strict=True)]


def errors_in_log(logs: str) -> dict[str, int]:
    """The errors the app's log shows, each once per failed request where Flask names one ("Exception on /path
    [GET]", then its traceback: the last exception line of it, a chained one's final error), else each exception
    line; the most frequent SAID_ERRORS, each cut to 200 characters."""
    before, failed = _failed_requests(logs)
    counted: Counter[str] = Counter()
    for _, part in failed:
        lines = _EXCEPTION_LINE.findall(part)
        if lines:
            kind, message = lines[-1]
            counted[f"{kind}: {message}"[:200]] += 1
    if not failed:
        counted.update(f"{kind}: {message}"[:200] for kind, message in _EXCEPTION_LINE.findall(before))
    return dict(counted.most_common(SAID_ERRORS))


def locked_in_log(logs: str) -> dict[str, int]:
    """How many requests SQLite's "database is locked" failed, by the request Flask's log names above each traceback
    ("POST /create"); under "" those the log shows without one (an app that logs its errors its own way)."""
    before, failed = _failed_requests(logs)
    counted: Counter[str] = Counter({"": before.count(LOCKED)})
    for name, part in failed:
        if LOCKED in part:  # once per request, however often its chained traceback says it
            counted[name] += 1
    return {name: count for name, count in counted.items() if count}
