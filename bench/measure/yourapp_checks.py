"""What `make yourapp` checks of the reader's app besides its speed: that each way answers every request of the
requests file as Flask's development server does (verified before it is loaded), the C libraries among the app's
requirements that gevent cannot patch (before the run), and the greenlets gevent's own monitor caught holding the
event loop (during the load)."""

from __future__ import annotations

import http.client
import re
from dataclasses import dataclass

from bench.loadgen.vegeta_targets import RequestSpec
from bench.measure.answer_match import AnswerMask, mask, same_answer

# Every way is asked with the same Host, so that an app writing absolute URLs writes the same ones behind Nginx.
HOST = "localhost"


@dataclass(frozen=True)
class Answer:
    status: int
    body: bytes


def ask(port: int, request: RequestSpec, timeout: float = 30) -> Answer:
    """One request of the file to 127.0.0.1:port, on a connection of its own; status 0 where no answer came."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        headers = {"Host": HOST, **dict(request.headers)}
        connection.request(request.method, request.target, body=request.body or None, headers=headers)
        answer = connection.getresponse()
        return Answer(answer.status, answer.read())
    except (OSError, http.client.HTTPException):
        return Answer(0, b"")
    finally:
        connection.close()


@dataclass(frozen=True)
class Expected:
    """What the development server answered to one request, asked twice: its status and its body, masked where the
    two answers differ."""

    request: RequestSpec
    status: int
    mask: AnswerMask


def reference_answers(port: int, requests: list[RequestSpec]) -> list[Expected]:
    """Each request asked twice of the development server. A request it does not answer with the status the file
    expects is the file's or the app's problem, not a way's: ValueError, in one line."""
    expected = []
    for request in requests:
        first, second = ask(port, request), ask(port, request)
        wanted = request.expect or first.status
        for answer in (first, second):
            if answer.status != wanted:
                got = f"status {answer.status}" if answer.status else "no answer"
                raise ValueError(
                    f"line {request.line}, {request.name}: the development server gave {got}, expected {wanted}"
                )
        expected.append(Expected(request, wanted, mask(first.body, second.body)))
    return expected


def first_difference(port: int, expected: list[Expected]) -> str | None:
    """None when the way answers every request as the reference did, else its first difference in one line."""
    for reference in expected:
        answer = ask(port, reference.request)
        difference = same_answer(reference.status, reference.mask, answer.status, answer.body)
        if difference:
            return f"line {reference.request.line}, {reference.request.name}: {difference}"
    return None


# C libraries whose waits no monkey-patch reaches (docs/labs.md: the blocking-call lab), by their PyPI name, with
# the fix. A greenlet waiting inside one holds the whole process.
UNPATCHABLE = {
    "psycopg2": "psycogreen's patch_psycopg() in the worker (gunicorn's post_fork), or psycopg 3",
    "psycopg2-binary": "psycogreen's patch_psycopg() in the worker (gunicorn's post_fork), or psycopg 3",
    "mysqlclient": "PyMySQL (pure Python, patched with the socket module)",
    "pylibmc": "pymemcache (pure Python)",
    "python-ldap": "ldap3 (pure Python)",
    "grpcio": "grpc.experimental.gevent.init_gevent() before any channel is made",
    "confluent-kafka": "its calls in gevent's threadpool (hub.threadpool.apply), or a pure-Python client",
    "pymssql": "its calls in gevent's threadpool (hub.threadpool.apply)",
    "cassandra-driver": "its GeventConnection (cluster.connection_class)",
    "oracledb": "its default thin mode (thick mode waits in C)",
}


def unpatchable(requirements: tuple[str, ...]) -> dict[str, str]:
    """The requirements gevent cannot patch, each with its fix."""
    found = {}
    for requirement in requirements:
        name = re.split(r"[\s\[<>=!~;@]", requirement.strip(), maxsplit=1)[0].lower().replace("_", "-")
        if name in UNPATCHABLE:
            found[name] = UNPATCHABLE[name]
    return found


@dataclass(frozen=True)
class Blocked:
    """What gevent's monitor reported: how many times a greenlet held the loop past the limit, and where the first
    one was, innermost frames last."""

    reports: int
    where: str | None
    stack: list[str]


SHOWN_FRAMES = 12


def blocked_greenlets(logs: str) -> Blocked:
    """gevent's monitor reports in the app's logs (GEVENT_MONITOR_THREAD_ENABLE, yourapp/compose.yml): each opens
    with a line of "=" and "... appears to be blocked", then the greenlet's stack, `File "...", line N, in f` lines."""
    blocks = re.split(r"^.*?={20,}\s*$", logs, flags=re.MULTILINE)
    reports = [block for block in blocks if "appears to be blocked" in block]
    if not reports:
        return Blocked(0, None, [])
    frames = re.findall(r'File "([^"]+)", line (\d+), in (\S+)', reports[0])
    # One report can print the same frames more than once (the greenlet's, then the thread's): each once, in order.
    stack = list(dict.fromkeys(f"{path}:{line} in {function}" for path, line, function in frames))
    # The innermost frame of the app's own code, where the fix goes; else the innermost of any.
    own = [frame for frame in stack if frame.startswith("/app/")]
    innermost = (own or stack)[-1] if stack else None
    # The last frames, down from that one at least: a page shows where the fix goes, however deep the call under it.
    start = min(stack.index(innermost), max(0, len(stack) - SHOWN_FRAMES)) if innermost else 0
    return Blocked(len(reports), innermost, stack[start:])
