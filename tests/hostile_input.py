"""Hostile input, end to end: every server of every scenario, directly and through Nginx, keeps answering.
tests/test_scenarios.py runs it on each scenario it has started, so that a scenario is started once for all its
end-to-end checks.

Hypothesis generates requests no browser sends (see tests/hostile_http.py): arbitrary query strings with a
hostile `delay` first, repeated and unknown parameters, huge values, non-UTF-8 bytes raw and
percent-encoded, request targets of up to 100 KB, and many, long or non-UTF-8 headers. Each example goes to
every target of the scenario on a new connection. The answer must be a 200 (only for a valid delay, with the
exact body) or a 4xx, never a 5xx, never a Python traceback or Flask's "Internal Server Error" page, never
silence, with one documented exception (uWSGI's HTTP router, see `uwsgi_router_refuses`); and afterwards
each target still serves a normal request.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from urllib.parse import unquote_to_bytes, urlsplit

from hypothesis import HealthCheck, example, given, settings

from bench.containers.compose import RunningScenario
from bench.containers.scenarios import Target, load_targets
from tests.conftest import fetch
from tests.hostile_http import (
    CRASH_MARKERS,
    REGRESSIONS,
    HostileRequest,
    RawAnswer,
    assert_sound,
    hostile_requests,
    request_bytes,
    send,
    valid_delays,
)

# Each example costs one connection per target and at most FAST_DELAY of waiting in the app. Measured without
# Docker on 2 cores, the servers started with the scenarios' options: 300 examples (and the REGRESSIONS) took
# 2.3 to 6.6 s per scenario, 9.8 s at most while the machine ran a benchmark; generating 100 KB requests is most
# of it. That leaves room under 30 s per scenario for Docker's port forwarding.
EXAMPLES = 300
ANSWER_TIMEOUT = 10.0  # seconds: a server that takes longer over a request of at most 50 ms is hanging
REFUSAL_SECONDS = 2.0  # how quickly a refusal without an answer must come, where one is allowed at all


# The one exception to "every request gets an answer": uWSGI's HTTP router (`--http`, in front of the workers of
# sync-uwsgi and async-gevent-uwsgi) turns each request into one uwsgi packet, whose size is a 16-bit field, and
# reads at most 64 KB of request head; both buffers grow a page (4 KB) at a time and the growth that would pass
# 64 KB fails. A request that does not fit, or whose Host (the router's routing key) is empty or longer than 255
# bytes, makes http_parse() or http_headers_parse() in plugins/http/http.c return -1, and the router closes the
# connection without writing anything. It has no code path that answers 4xx to those and no option that moves
# the limits (--buffer-size, at most 65535, sizes the worker's side of the same packet). Measured: a target of
# 30,721 bytes, which travels twice (REQUEST_URI and QUERY_STRING), was the longest answered. For those requests
# only, a close within REFUSAL_SECONDS is the refusal, and the next request must be served. Nginx in front of
# uWSGI (nginx-uwsgi) refuses them itself with a 4xx, so it gets no such leeway.
UWSGI_PACKET_LIMIT = 65535 - 4096
UWSGI_HEAD_LIMIT = 65535 - 4096
UWSGI_HOST_LIMIT = 255
UWSGI_SLACK = 256  # the variables the estimate cannot know exactly: the container's hostname, the client port


def uwsgi_packet_size(head: bytes) -> int:
    """The size of the uwsgi packet uWSGI's HTTP router builds from this request head: a 2-byte length before
    each name and each value; the request line as REQUEST_URI, PATH_INFO (decoded) and QUERY_STRING; each
    header as HTTP_NAME (upper case, - as _), headers of the same name merged with ", " as the router does."""
    request_line, *header_lines = head.rstrip(b"\r\n").split(b"\r\n")
    method, target, protocol = request_line.split(b" ", 2)
    path, _, query = target.partition(b"?")
    variables = {
        b"REQUEST_METHOD": len(method),
        b"REQUEST_URI": len(target),
        b"PATH_INFO": len(unquote_to_bytes(path)),
        b"QUERY_STRING": len(query),
        b"SERVER_PROTOCOL": len(protocol),
        b"SCRIPT_NAME": 0,
        b"SERVER_NAME": 64,
        b"SERVER_PORT": 5,
        b"UWSGI_ROUTER": 4,
        b"REMOTE_ADDR": 15,
        b"REMOTE_PORT": 5,
    }
    for line in header_lines:
        name, _, value = line.partition(b":")
        key = b"HTTP_" + name.upper().replace(b"-", b"_")
        length = len(value.lstrip(b" "))
        variables[key] = variables[key] + 2 + length if key in variables else length
    return sum(4 + len(name) + length for name, length in variables.items())


def uwsgi_router_refuses(target: Target, request: HostileRequest) -> bool:
    """True when uWSGI's HTTP router cannot take this request at all (see UWSGI_PACKET_LIMIT)."""
    if target.server != "uwsgi" or target.via:
        return False
    parts = urlsplit(target.url)
    head = request_bytes(parts.hostname or "127.0.0.1", parts.port or 80, request)
    hosts = [line.partition(b":")[2].lstrip(b" ") for line in head.split(b"\r\n")[1:] if line[:5].lower() == b"host:"]
    return (
        len(head) > UWSGI_HEAD_LIMIT - UWSGI_SLACK
        or uwsgi_packet_size(head) > UWSGI_PACKET_LIMIT - UWSGI_SLACK
        or (bool(hosts) and not 0 < len(b", ".join(hosts)) <= UWSGI_HOST_LIMIT)
    )


def problem(request: HostileRequest, answer: RawAnswer, expected_body: Callable[[float], str]) -> str | None:
    """Why this answer breaks the requirement, or None when it is acceptable."""
    if answer.timed_out:
        return f"no answer within {ANSWER_TIMEOUT:g} s"
    if answer.status is None:
        return "closed the connection without an HTTP answer"
    if not (answer.status == 200 or 400 <= answer.status < 500):
        return f"status {answer.status}, not 200 or 4xx"
    if any(marker in answer.raw for marker in CRASH_MARKERS):
        return "a crash report in the answer"
    if answer.status == 200:
        # The app answers 200 only on / and only for a valid first `delay`: anything else means a server or
        # Nginx changed the request on its way to the app.
        delays = valid_delays(request.query) if request.path == b"/" else set()
        if not delays:
            return "200 for a request the app must refuse"
        if answer.text not in {expected_body(delay) for delay in delays}:
            return f"200 with an unexpected body for delay {sorted(delays)}"
    return None


def check(target: Target, request: HostileRequest) -> None:
    answer = send(target.url, request, timeout=ANSWER_TIMEOUT)
    if answer.status is None and not answer.raw and not answer.timed_out and uwsgi_router_refuses(target, request):
        assert answer.seconds < REFUSAL_SECONDS, f"{target.name}: slow refusal\n{request.describe()}"
        assert_still_serving(target)
        return
    found = problem(request, answer, target.expected_body)
    assert found is None, f"{target.name}: {found}\n{request.describe()}\n{answer.describe()}"


def assert_still_serving(target: Target) -> None:
    answer = fetch(f"{target.url}?delay=0", timeout=ANSWER_TIMEOUT)
    assert (answer.status, answer.body) == (200, target.expected_body(0)), (target.name, answer)


def assert_hostile_requests_answered(scenario: RunningScenario) -> None:
    """Every example to every target of the running scenario: 200 or 4xx, never a crash or silence; then each
    target still serves a normal request."""
    targets = load_targets(scenario.scenario)

    @settings(
        max_examples=EXAMPLES,
        deadline=None,  # a round trip, and a 100 KB request, vary in time: not what this test judges
        database=None,  # nothing written into the work tree; a failure prints its example in full anyway
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(request=hostile_requests())
    def every_target_answers(request: HostileRequest) -> None:
        assert_sound(request)
        # The targets at once: each example costs the slowest target's round trip, not their sum.
        for checked in [pool.submit(check, target, request) for target in targets]:
            checked.result()

    for request in REGRESSIONS:
        every_target_answers = example(request=request)(every_target_answers)
    with ThreadPoolExecutor(max_workers=len(targets)) as pool:
        every_target_answers()
    for target in targets:
        assert_still_serving(target)
