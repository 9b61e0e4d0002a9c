"""The timeline load's summary on made-up timelines (no Docker, no network), and the client itself against a tiny
local server: what an event costs is only as right as the counting."""

from __future__ import annotations

import http.server
import threading
import time
from collections.abc import Iterator

import pytest

from bench.loadgen import timeline
from bench.loadgen.timeline import OK, RESET, Request, Timeline

DELAY = 0.5


def steady(clients: int, seconds: float, start: float = 0.0, delay: float = DELAY) -> list[Request]:
    """Each client answered every `delay` seconds from `start` to `seconds`, lockstep, as a closed loop is."""
    requests = []
    for _ in range(clients):
        moment = start
        while moment + delay <= seconds:
            requests.append(Request(moment, moment + delay, OK))
            moment += delay
    return requests


def test_a_steady_load_with_a_harmless_event_loses_nothing_and_recovers_at_once() -> None:
    summary = timeline.summarize(Timeline(steady(100, 12), 12.0, event_at=4.02, event_done_at=4.1))
    assert summary.sent == summary.answered == 2400
    assert summary.failed == 0 and summary.failed_by_kind == {}
    assert summary.ok_per_second_before == pytest.approx(200, rel=0.05)
    assert summary.recovery_s == 0.0
    # Every client had one request in flight at the event; none failed.
    assert summary.in_flight_at_event == 100 and summary.failed_in_flight_at_event == 0
    assert len(summary.bins[OK]) == 120 and sum(summary.bins[OK]) == 2400


def test_a_killed_worker_loses_what_it_held_and_only_that() -> None:
    # 100 clients; just after 4.2 s the 25 held by one worker are reset; they retry at 4.3 s and are answered again.
    survivors = steady(75, 12)
    held = steady(25, 4.0) + [Request(4.0, 4.21, RESET) for _ in range(25)] + steady(25, 12, start=4.3)
    summary = timeline.summarize(Timeline(survivors + held, 12.0, event_at=4.2, event_done_at=4.25))
    assert summary.failed == 25 and summary.failed_by_kind == {RESET: 25}
    assert summary.failed_in_flight_at_event == 25 and summary.failed_after_event == 0
    assert summary.bins[RESET][42] == 25
    assert summary.recovery_s is not None and summary.recovery_s <= 1.0


def test_a_server_that_stays_down_never_recovers() -> None:
    # Everyone answered until 4 s, then every 0.1 s a refused connection: the container is gone.
    requests = steady(100, 4.0)
    requests += [Request(4.0 + step / 10, 4.0 + step / 10 + 0.001, "refused") for step in range(80) for _ in range(100)]
    summary = timeline.summarize(Timeline(requests, 12.0, event_at=4.0, event_done_at=4.3))
    assert summary.recovery_s is None and summary.first_ok_after_event_s is None
    assert summary.failed_by_kind == {"refused": 8000} and summary.failed_after_event == 8000


def test_a_server_that_comes_back_recovers_when_its_rate_does() -> None:
    # Down from 4 to 7 s (502s from a proxy), then everyone answered again: back 3 s after the event.
    requests = steady(100, 4.0)
    requests += [
        Request(4.0 + step / 10, 4.0 + step / 10 + 0.01, "status 502") for step in range(30) for _ in range(100)
    ]
    requests += steady(100, 12.0, start=7.0)
    summary = timeline.summarize(Timeline(requests, 12.0, event_at=4.0))
    assert summary.recovery_s == pytest.approx(3.0, abs=0.2)
    assert summary.first_ok_after_event_s == pytest.approx(3.5)
    assert summary.failed_by_kind == {"status 502": 3000}


def test_one_burst_is_not_a_recovery() -> None:
    # Half the rate after the event, with one full round at 6 s: the rate must hold for two windows.
    requests = steady(100, 4.0) + steady(50, 12.0, start=4.0) + steady(50, 6.5, start=6.0)
    summary = timeline.summarize(Timeline(requests, 12.0, event_at=4.0))
    assert summary.recovery_s is None


def test_requests_that_end_after_the_load_count_in_the_last_bin() -> None:
    summary = timeline.summarize(Timeline([Request(11.9, 13.0, OK)], 12.0))
    assert summary.bins and summary.bins[OK][-1] == 1 and summary.event_at_s is summary.recovery_s is None


def test_outcomes_by_what_the_client_saw() -> None:
    assert timeline.outcome_of_error(ConnectionRefusedError()) == "refused"
    assert timeline.outcome_of_error(ConnectionResetError()) == "reset"
    assert timeline.outcome_of_error(BrokenPipeError()) == "reset"
    assert timeline.outcome_of_error(TimeoutError()) == "timed out"
    assert timeline.outcome_of_error(OSError("no route")) == "other"
    assert timeline.outcome_of_answer(200, b"Hi", "Hi") == OK
    assert timeline.outcome_of_answer(200, b"Ho", "Hi") == "wrong body"
    assert timeline.outcome_of_answer(502, b"Hi", "Hi") == "status 502"


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as the servers under test

    def do_GET(self) -> None:  # noqa: N802 (the stdlib's name)
        body = b"fine"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        # Every third answer closes its connection without saying so (uWSGI's HTTP router does, for one).
        self.close_connection = self.server.answered % 3 == 2  # type: ignore[attr-defined]
        self.server.answered += 1  # type: ignore[attr-defined]
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def local_server() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.answered = 0  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()
    server.server_close()


def test_the_client_reconnects_quietly_when_the_server_closed_an_idle_connection(local_server: str) -> None:
    calls = []
    result = timeline.run(local_server, 4, 1.0, "fine", event_at=0.5, event=lambda: calls.append(1) or {"did": "x"})
    assert calls == [1] and result.event == {"did": "x"} and 0.5 <= result.event_at < 0.7
    summary = timeline.summarize(result)
    assert summary.sent > 20 and summary.failed == 0, summary.failed_by_kind


def test_a_refused_port_is_counted_and_not_hammered() -> None:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # bound, never listening: connections are refused
        result = timeline.run(f"http://127.0.0.1:{port}/", 2, 0.5, "fine")
    summary = timeline.summarize(result)
    assert summary.failed_by_kind.keys() == {"refused"}
    # Each client pauses after an error: at most one try per pause, per client.
    assert summary.failed <= 2 * (0.5 / timeline.PAUSE_AFTER_ERROR + 1)


class SlowHandler(Handler):
    """Each answer after LONG s, on a kept-alive connection: requests in rounds, as `make incidents`' long ones."""

    LONG = 0.6

    def do_GET(self) -> None:  # noqa: N802 (the stdlib's name)
        time.sleep(self.LONG)
        body = b"fine"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def test_an_event_waits_for_a_round_of_requests_just_sent() -> None:
    """Planned just before the first round ends, the event waits for the next round to be sent: at its moment every
    client has a request in flight sent at most 0.1 s before, where a fixed moment would find the old round ending."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), SlowHandler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url, clients = f"http://127.0.0.1:{server.server_address[1]}/", 4
        wanted = timeline.InFlight(clients, sent_within=0.1, limit=3.0)
        result = timeline.run(url, clients, 2.0, "fine", event_at=0.5, event=lambda: {"did": "x"}, in_flight=wanted)
    finally:
        server.shutdown()
        server.server_close()
    at = result.event_at
    assert at is not None and at >= SlowHandler.LONG, (at, result.waited_for_in_flight)
    in_flight = [request for request in result.requests if request.started <= at < request.ended]
    assert len(in_flight) == clients and all(at - request.started <= 0.1 for request in in_flight), (at, in_flight)


class ClosingHandler(Handler):
    """Closes every connection right after its answer without saying so, as uWSGI's HTTP router does."""

    def do_GET(self) -> None:  # noqa: N802 (the stdlib's name)
        self.server.answered = 2  # type: ignore[attr-defined]  # Handler closes where answered % 3 == 2
        super().do_GET()


class KeepingHandler(Handler):
    """Keeps every connection alive."""

    def do_GET(self) -> None:  # noqa: N802 (the stdlib's name)
        self.server.answered = 0  # type: ignore[attr-defined]
        super().do_GET()


def test_a_server_that_closes_after_every_answer_gets_a_connection_per_request() -> None:
    """The warm-up finds the server closing each kept-alive connection after its answer (make incidents' keeps_alive):
    the load then says `Connection: close` and opens one per request, racing no close; against a server that keeps
    them, it keeps them."""
    from bench.modes.incidents.run import keeps_alive

    found = {}
    for name, handler in (("closing", ClosingHandler), ("keeping", KeepingHandler)):
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        server.answered = 0  # type: ignore[attr-defined]
        threading.Thread(target=server.serve_forever, daemon=True).start()
        try:
            url = f"http://127.0.0.1:{server.server_address[1]}/"
            warm = timeline.run(url, 4, 0.5, "fine")
            found[name] = keeps_alive(warm)
            load = timeline.run(url, 4, 0.5, "fine", keep_alive=found[name])
        finally:
            server.shutdown()
            server.server_close()
        summary = timeline.summarize(load)
        assert summary.failed == 0 and summary.sent > 20, (name, summary.failed_by_kind)
        if name == "closing":
            assert load.closed_after_answers == 0 and load.resent == 0, load  # no connection reused, none raced
    assert found == {"closing": False, "keeping": True}, found
