"""A steady closed-loop load that keeps every request (when it started, when it ended, how it ended), with one event
in the middle of it, and the summary of that timeline: what the event cost and how long the server took to get back.

Not ab, hey or wrk: they report totals, and the question here is *when* requests failed and which ones (the ones in
flight at the event, or later ones). Each client is a thread with one keep-alive connection (http.client), sending
the next request as soon as the last one ended, like a browser or a service's HTTP pool: after an error it pauses
briefly and reconnects, so a server that is down is not hammered by a tight loop of refused connections.

Everything here is in seconds from the load's start. The standard library only, and no Docker: the event is a
callable the caller gives (bench/modes/incidents/run.py sends a signal, kills or replaces a container)."""

from __future__ import annotations

import http.client
import select
import socket
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any
from urllib.parse import urlsplit

OK = "ok"
# Every other outcome is a failure: "status 502" (and every other status code), "wrong body", or no answer at all.
REFUSED, RESET, TIMED_OUT, WRONG_BODY, OTHER = "refused", "reset", "timed out", "wrong body", "other"
# After a failed request a client waits this long before it reconnects: a real client backs off, and without it a
# refused port turns 100 clients into a busy loop of thousands of requests a second that measures the client.
PAUSE_AFTER_ERROR = 0.1
# A kept-alive connection the server closed just as the client reused it fails at once, before the server has read
# the request: dropped() sees most of these closes, not one that is still on its way. Such a failure, within this
# long of sending on a reused connection, is sent again at once on a new connection, as browsers and urllib3 do,
# and counted apart (`resent`); a failure later than that is the server's and counts.
STALE_SECONDS = 0.02
BIN_SECONDS = 0.1


@dataclass(frozen=True)
class Request:
    started: float
    ended: float
    outcome: str  # OK or the kind of failure

    @property
    def failed(self) -> bool:
        return self.outcome != OK


@dataclass(frozen=True)
class Exchange:
    """One request a client sends, and how its answer is judged: (status, body) to OK or the kind of failure."""

    method: str
    path: str
    judge: Callable[[int, bytes], str]
    body: bytes | None = None
    headers: dict[str, str] = field(default_factory=dict)

    @property
    def safe_to_resend(self) -> bool:  # as urllib3's retries: never a request that may change something twice
        return self.method in ("GET", "HEAD", "OPTIONS")


# A load run `until` something happens: polled this often, and this much load after it, to see what it did.
UNTIL_POLL, UNTIL_AFTER = 0.5, 2.0


@dataclass
class Timeline:
    """Every request of one load, and when the event started and ended (None: no event ran)."""

    requests: list[Request]
    seconds: float  # how long clients kept sending new requests
    resent: int = 0  # requests sent again on a new connection after a closed kept-alive one (STALE_SECONDS)
    waited_for_in_flight: float | None = None  # seconds the event waited past its moment for InFlight (None: did not)
    # Kept-alive connections the server closed right after an answer, without `Connection: close`: found closed
    # before their next request, or failing at once with it (resent). A server that does so closes every one.
    closed_after_answers: int = 0
    event_at: float | None = None
    event_done_at: float | None = None
    event: dict[str, Any] = field(default_factory=dict)  # what the event callable returned: what it did, to whom


def outcome_of_error(error: BaseException) -> str:
    """A failed exchange by what the client saw: the kinds a user of an HTTP client tells apart."""
    if isinstance(error, ConnectionRefusedError):
        return REFUSED
    if isinstance(error, TimeoutError | socket.timeout):
        return TIMED_OUT
    # RemoteDisconnected (a closed connection instead of an answer) is a ConnectionResetError; IncompleteRead is an
    # answer cut short: for the user both are a connection that broke under their request.
    if isinstance(error, ConnectionError | http.client.IncompleteRead):
        return RESET
    return OTHER


def outcome_of_answer(status: int, body: bytes, expected_body: str) -> str:
    if 200 <= status < 300:
        return OK if body.decode(errors="replace") == expected_body else WRONG_BODY
    return f"status {status}"


def dropped(connection: http.client.HTTPConnection) -> bool:
    """Whether the server closed this idle kept-alive connection (readable with nothing to read is a close):
    reused, it would fail the next request although the server never saw it. urllib3 checks the same way. uWSGI's
    HTTP router, for one, closes after every answer without saying `Connection: close`."""
    if connection.sock is None:
        return False
    readable, _, _ = select.select([connection.sock], [], [], 0)
    return bool(readable)


# What a client sends next: the client's number in, the request out (each client calls it from its own thread).
Requests = Callable[[int], Exchange]


@dataclass(frozen=True)
class InFlight:
    """What an event waits for past its planned moment: at least `requests` requests in flight, counted by the clients
    (sent, no answer yet), each sent at most `sent_within` s before (None: any). A fixed moment is luck on a slow or
    busy machine: a round of long requests answered late is not yet sent again when the event comes, and a deploy
    meant to cut them finds none. Waits at most `limit` s; whether it got there is the record's in-flight count."""

    requests: int
    sent_within: float | None = None
    limit: float = 10.0

    def wait(self, load: ClosedLoopClients) -> float:
        """Until the requests are in flight, or `limit` s; the seconds waited."""
        waiting = load.now()
        while load.in_flight(self.sent_within) < self.requests and load.now() < waiting + self.limit:
            time.sleep(0.002)
        return round(load.now() - waiting, 3)


class ClosedLoopClients:
    """`clients` threads, each sending GET `url` (or what `requests` gives it) one after another on its own
    keep-alive connection, `pause` seconds apart, until `seconds` have passed since the start; a request in flight
    then still ends (within `timeout`)."""

    def __init__(
        self,
        url: str,
        clients: int,
        seconds: float,
        expected_body: str,
        timeout: float = 10.0,
        requests: Requests | None = None,
        pause: float = 0.0,
        keep_alive: bool = True,
    ) -> None:
        parts = urlsplit(url)
        self.host, self.port = parts.hostname or "127.0.0.1", parts.port or 80
        path = parts.path + (f"?{parts.query}" if parts.query else "")
        same = Exchange("GET", path, lambda status, body: outcome_of_answer(status, body, expected_body))
        self.requests: Requests = requests or (lambda client: same)
        self.clients, self.seconds, self.timeout, self.pause = clients, seconds, timeout, pause
        self.started = 0.0
        self.per_client: list[list[Request]] = [[] for _ in range(clients)]
        self.resent = [0] * clients
        self.keep_alive = keep_alive
        self.closed_after_answers = [0] * clients
        self.sending_since: list[float | None] = [None] * clients  # when each client's request in flight was sent
        self._threads: list[threading.Thread] = []

    def now(self) -> float:
        return time.monotonic() - self.started

    def exchange(self, connection: http.client.HTTPConnection, request: Exchange) -> str:
        headers = request.headers if self.keep_alive else {**request.headers, "Connection": "close"}
        try:
            connection.request(request.method, request.path, body=request.body, headers=headers)
            response = connection.getresponse()
            body = response.read()
            outcome = request.judge(response.status, body)
            if response.will_close or not self.keep_alive:
                connection.close()
            return outcome
        except (OSError, http.client.HTTPException) as error:
            connection.close()  # http.client opens a new one on the next request
            return outcome_of_error(error)

    def _client(self, index: int) -> None:
        kept = self.per_client[index]
        connection = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout)
        try:
            while self.now() < self.seconds:
                if dropped(connection):
                    self.closed_after_answers[index] += 1
                    connection.close()
                reused = connection.sock is not None
                request = self.requests(index)
                started = self.now()
                self.sending_since[index] = started
                outcome = self.exchange(connection, request)
                stale = outcome == RESET and reused and self.now() - started < STALE_SECONDS
                if stale:
                    self.closed_after_answers[index] += 1
                if stale and request.safe_to_resend:
                    self.resent[index] += 1
                    outcome = self.exchange(connection, request)
                kept.append(Request(round(started, 4), round(self.now(), 4), outcome))
                self.sending_since[index] = None
                time.sleep(PAUSE_AFTER_ERROR if outcome != OK else self.pause)
        finally:
            connection.close()

    def in_flight(self, sent_within: float | None = None) -> int:
        """How many requests are in flight now (sent, not yet ended); with `sent_within`, only those sent at most that
        many seconds ago."""
        oldest = -1.0 if sent_within is None else self.now() - sent_within
        return sum(1 for since in list(self.sending_since) if since is not None and since >= oldest)

    def start(self) -> None:
        self.started = time.monotonic()
        self._threads = [
            threading.Thread(target=self._client, args=(index,), daemon=True) for index in range(self.clients)
        ]
        for thread in self._threads:
            thread.start()

    def join(self) -> list[Request]:
        for thread in self._threads:
            thread.join(self.seconds + self.timeout + 5)
        return sorted((request for kept in self.per_client for request in kept), key=lambda r: r.started)


def run(
    url: str,
    clients: int,
    seconds: float,
    expected_body: str,
    event_at: float | None = None,
    event: Callable[[], dict[str, Any]] | None = None,
    timeout: float = 10.0,
    requests: Requests | None = None,
    pause: float = 0.0,
    in_flight: InFlight | None = None,
    keep_alive: bool = True,
    until: Callable[[], bool] | None = None,
    most_seconds: float | None = None,
) -> Timeline:
    """The load, with `event` called once `event_at` seconds in (from this thread, while the clients go on), and,
    with `in_flight`, not before that many requests are in flight. Without `keep_alive`, each request on a connection
    of its own, `Connection: close` said. With `until`, the load goes on past `seconds` until it says so, and
    UNTIL_AFTER seconds more, at most `most_seconds` in all: an event that comes after so many requests, not at a
    moment, comes later on a slower machine."""
    load = ClosedLoopClients(url, clients, seconds, expected_body, timeout, requests, pause, keep_alive)
    load.start()
    timeline = Timeline([], seconds)
    if until is not None:
        most = most_seconds or 4 * seconds
        while load.now() < most and not until():
            load.seconds = min(most, max(load.seconds, load.now() + UNTIL_AFTER))  # the clients never run out first
            time.sleep(UNTIL_POLL)
        timeline.seconds = load.seconds = min(most, max(load.seconds, load.now() + UNTIL_AFTER))
    if event is not None and event_at is not None:
        time.sleep(max(0.0, event_at - load.now()))
        if in_flight is not None:
            timeline.waited_for_in_flight = in_flight.wait(load)
        timeline.event_at = round(load.now(), 4)
        try:
            timeline.event = event()
        except Exception as error:  # the load's record must say the event failed, not vanish with it
            timeline.event = {"problem": f"the event failed: {error.__class__.__name__}: {error}"}
        timeline.event_done_at = round(load.now(), 4)
        # The event's own moment, when it says it (time.monotonic() just before its decisive command): finding a
        # process or a container first can take longer than a request.
        if isinstance(timeline.event.get("at"), float):
            timeline.event_at = round(timeline.event.pop("at") - load.started, 4)
    timeline.requests = load.join()
    timeline.resent = sum(load.resent)
    timeline.closed_after_answers = sum(load.closed_after_answers)
    return timeline


def bins(requests: list[Request], seconds: float, bin_seconds: float = BIN_SECONDS) -> dict[str, list[int]]:
    """Answers per bin of `bin_seconds`, by the moment each request ended, one list per outcome ("ok" always):
    the timeline's chart. Requests that end after `seconds` go in the last bin, so nothing counted goes missing."""
    count = max(1, round(seconds / bin_seconds))
    found: dict[str, list[int]] = {OK: [0] * count}
    for request in requests:
        index = min(count - 1, int(request.ended / bin_seconds))
        found.setdefault(request.outcome, [0] * count)[index] += 1
    return found


def recovery_seconds(
    ok_bins: list[int],
    event_at: float,
    baseline: float,
    seconds: float,
    bin_seconds: float = BIN_SECONDS,
    window: float = 1.0,
    share: float = 0.9,
) -> float | None:
    """Seconds from the event to the first moment from which the 2xx rate is back to `share` of `baseline` (2xx per
    second before the event) in each of the next two windows of `window` seconds; 0 when it never dropped; None
    when it did not come back within the load. Two windows, so that one burst of retries is not a recovery; whole
    windows, because a closed loop answers in rounds of the delay and a bin alone is a round or nothing."""
    if baseline <= 0:
        return None
    per_window = round(window / bin_seconds)
    usable = min(len(ok_bins), round(seconds / bin_seconds))  # the last bin holds the stragglers: not a rate
    first = round(event_at / bin_seconds)
    for start in range(first, usable - 2 * per_window + 1):
        windows = (ok_bins[start : start + per_window], ok_bins[start + per_window : start + 2 * per_window])
        if all(sum(counts) / window >= share * baseline for counts in windows):
            return round(max(0.0, start * bin_seconds - event_at), 2)
    return None


@dataclass(frozen=True, kw_only=True)
class TimelineSummary:
    """The timeline in figures (summarize), named as make incidents' record names them: the record is made of this
    class, and takes a summary in whole. Those around the event's moment are none where there was no moment."""

    load_seconds: float
    sent: int | None = None
    resent_on_closed_connection: int | None = None
    answered: int | None = None  # 2xx with the expected body
    failed: int | None = None
    failed_by_kind: dict[str, int] = field(default_factory=dict)
    longest_s: float | None = None
    bin_seconds: float | None = None
    bins: dict[str, list[int]] | None = None  # per kind of answer ("ok", or a failure), its count per bin
    event_at_s: float | None = None
    event_done_at_s: float | None = None
    event_waited_for_in_flight_s: float | None = None  # past its moment, for the requests in flight (None: did not)
    in_flight_at_event: int | None = None
    failed_in_flight_at_event: int | None = None
    failed_before_event: int | None = None
    failed_after_event: int | None = None
    ok_per_second_before: float | None = None
    # A server serves again as soon as a request sent after the event is answered: less than "recovered".
    first_ok_after_event_s: float | None = None
    recovery_s: float | None = None  # None, with an event: the 2xx rate was not back within the load


def summarize(timeline: Timeline, baseline_seconds: float = 3.0, bin_seconds: float = BIN_SECONDS) -> TimelineSummary:
    """The timeline in figures: requests sent, answered well, failed by kind, the failed ones that were in flight
    when the event came, answers per bin, the 2xx rate before the event and how long it took to get back to it."""
    requests, event_at = timeline.requests, timeline.event_at
    kinds = Counter(request.outcome for request in requests if request.failed)
    per_bin = bins(requests, timeline.seconds, bin_seconds)
    summary = TimelineSummary(
        sent=len(requests),
        resent_on_closed_connection=timeline.resent,
        answered=sum(not request.failed for request in requests),
        failed=sum(kinds.values()),
        failed_by_kind=dict(sorted(kinds.items())),
        longest_s=round(max((r.ended - r.started for r in requests), default=0.0), 3),
        bin_seconds=bin_seconds,
        bins=per_bin,
        load_seconds=timeline.seconds,
    )
    if event_at is None:
        return summary
    in_flight = [request for request in requests if request.started < event_at < request.ended]
    before_from = max(0.0, event_at - baseline_seconds)
    answered_before = sum(1 for r in requests if not r.failed and before_from <= r.ended < event_at)
    baseline = answered_before / (event_at - before_from) if event_at > before_from else 0.0
    return replace(
        summary,
        event_at_s=event_at,
        event_done_at_s=timeline.event_done_at,
        event_waited_for_in_flight_s=timeline.waited_for_in_flight or None,
        in_flight_at_event=len(in_flight),
        failed_in_flight_at_event=sum(request.failed for request in in_flight),
        failed_before_event=sum(request.failed for request in requests if request.ended < event_at),
        failed_after_event=sum(request.failed for request in requests if request.started >= event_at),
        ok_per_second_before=round(baseline, 1),
        first_ok_after_event_s=min(
            (round(r.ended - event_at, 3) for r in requests if not r.failed and r.started >= event_at), default=None
        ),
        recovery_s=recovery_seconds(per_bin[OK], event_at, baseline, timeline.seconds, bin_seconds),
    )
