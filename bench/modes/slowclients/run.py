"""`make slowclients`: how many slow clients it takes before a normal request waits.

A slow client costs a server nothing in CPU: it opens a connection and then takes its time. Three kinds, each
opened in growing numbers and held open while a few normal requests (`?delay=0`) are sent next to them:

- head: a request head sent in part (`GET /?delay=0 HTTP/1.1`, `Host:`, no blank line), the rest never comes;
- body: a complete head announcing a 100 KB body (`POST`, `Content-Length: 100000`), then 2 bytes of it;
- idle: one complete HTTP/1.1 request, answered, then the connection kept open and silent (keep-alive).

The finding per target and kind is the first number of slow connections at which a normal request took longer
than a threshold (3 s) or failed. Between two levels the slow connections close and the target must answer a
normal request again: a target that stays wedged is a failure. Every connection goes from the host to the
published port, as a real client's would, so Docker's userland proxy (docker-proxy) sits in between for every
target alike: it accepts each connection at once and opens its own to the server, which then meets the same slow
bytes. One record per level in OUT/results.json, rendered to OUT/results.md.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
import time
from dataclasses import dataclass, field, replace

from bench.containers.compose import RunningScenario
from bench.containers.scenarios import SCENARIOS, Target, load_targets
from bench.measure.client import verify
from bench.measure.resultset import Progress, ResultSet
from bench.measure.scenario_start import ScenarioStart
from bench.modes.slowclients import render as renderer
from bench.modes.slowclients.record import NormalRequest, SlowClientResult
from bench.options import Option, Options

KINDS = ("head", "body", "idle")
LEVELS = (10, 25, 50, 100, 200, 400, 800, 1600)
THRESHOLD_SECONDS = 3.0  # a normal request here takes 0.01 to 0.1 s: 3 s is a client that gives up
BODY_BYTES = 100_000
PROBES = 3  # normal requests per level, sent PROBE_SPACING apart so that one lucky moment is not the answer
PROBE_SPACING = 1.0
PROBE_TIMEOUT = 7.0  # with the settling and the spacing, each level holds its slow connections 10 s at most
SETTLE_SECONDS = 1.0  # after the last slow connection: docker-proxy and the server receive what was sent
IDLE_ANSWER_SECONDS = 5.0  # how long the idle kind waits for the answers to its one request each
RECOVERY_SECONDS = 30.0  # after the slow connections close, a normal request must be answered within this
CONNECTING_AT_ONCE = 200  # connects in flight at once: a burst of thousands of SYNs would test the kernel


@dataclass
class Probe:
    """One normal request sent while the slow connections were open."""

    sent_after: float  # seconds after the last slow connection was in place
    seconds: float
    status: int | None  # None: no HTTP answer
    problem: str | None  # why it does not count as a normal answer, None when it does


@dataclass
class Hold:
    """One level: `connections` slow clients of one kind, and what a normal request met meanwhile."""

    kind: str
    connections: int
    opened: int  # slow connections that connected and sent their bytes
    answered: int | None  # idle only: how many of their one requests were answered
    setup_seconds: float  # opening them (and, for idle, their answers)
    probes: list[Probe] = field(default_factory=list)
    closed_by_server: int = 0  # slow connections the server (or docker-proxy) closed while they were held
    first_closed_after: float | None = None  # seconds after opening, the first of those
    # What those got before the close, counted: a status ("405"), or "nothing" for a close without an answer.
    closed_with: dict[str, int] = field(default_factory=dict)

    @property
    def worst_seconds(self) -> float:
        return max(probe.seconds for probe in self.probes)

    def delayed(self, threshold: float) -> bool:
        return any(probe.problem is not None or probe.seconds > threshold for probe in self.probes)


def slow_request(kind: str, host: str) -> bytes:
    """What a slow client of this kind sends, all of it at once."""
    if kind == "head":
        return f"GET /?delay=0 HTTP/1.1\r\nHost: {host}\r\n".encode()
    if kind == "body":
        head = f"POST /?delay=0 HTTP/1.1\r\nHost: {host}\r\nContent-Length: {BODY_BYTES}\r\n\r\n"
        return head.encode() + b"xx"
    if kind == "idle":
        return f"GET /?delay=0 HTTP/1.1\r\nHost: {host}\r\n\r\n".encode()
    raise ValueError(f"unknown kind {kind!r}; choose one of {KINDS}")


async def _read_answer(reader: asyncio.StreamReader, until_close: bool) -> tuple[int, bytes]:
    """Status and body of one HTTP answer: the body by its Content-Length, else up to the close."""
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split(" ", 2)[1])
    lengths = [line.split(":", 1)[1].strip() for line in lines[1:] if line.lower().startswith("content-length:")]
    if lengths and not until_close:
        return status, await reader.readexactly(int(lengths[0]))
    return status, await reader.read()


async def probe(host: str, port: int, expected_body: str, timeout: float, sent_after: float = 0.0) -> Probe:
    """A normal request on a new connection: 200 and the exact body within `timeout`, or what went wrong."""
    started = time.monotonic()
    writer = None
    try:
        async with asyncio.timeout(timeout):
            reader, writer = await asyncio.open_connection(host, port)
            writer.write(f"GET /?delay=0 HTTP/1.1\r\nHost: {host}:{port}\r\nConnection: close\r\n\r\n".encode())
            await writer.drain()
            status, body = await _read_answer(reader, until_close=False)
    except TimeoutError:
        return Probe(sent_after, time.monotonic() - started, None, f"no answer within {timeout:g} s")
    except (OSError, asyncio.IncompleteReadError, ValueError, IndexError) as error:
        return Probe(sent_after, time.monotonic() - started, None, f"no answer: {error.__class__.__name__}")
    finally:
        if writer is not None:
            writer.close()
    seconds = time.monotonic() - started
    if status != 200 or body.decode("utf-8", "replace") != expected_body:
        return Probe(sent_after, seconds, status, f"status {status}, body {body[:60]!r}")
    return Probe(sent_after, seconds, status, None)


@dataclass
class _SlowConnection:
    writer: asyncio.StreamWriter
    watcher: asyncio.Task[None] | None = None  # reads what the server sends, and notes when it closes
    answered: bool = False  # idle: its one request was answered
    closed_after: float | None = None  # seconds after the level started, when the server closed it
    said: bytes = b""  # the start of what the server sent (after the idle kind's answer), if anything


async def _open_one(
    host: str, port: int, kind: str, opened_at: float, gate: asyncio.Semaphore
) -> _SlowConnection | None:
    async with gate:
        try:
            reader, writer = await asyncio.wait_for(asyncio.open_connection(host, port), 10)
            writer.write(slow_request(kind, f"{host}:{port}"))
            await writer.drain()
        except (OSError, TimeoutError):
            return None
    connection = _SlowConnection(writer)

    async def watch() -> None:
        """Read what the server says: for idle, its answer first; then wait for the server to close."""
        with contextlib.suppress(OSError, asyncio.IncompleteReadError, ValueError, IndexError):
            if kind == "idle":
                await _read_answer(reader, until_close=False)
                connection.answered = True
            while data := await reader.read(65536):
                connection.said = (connection.said + data)[:64]  # an answer before the close: 405, 408, 400
        connection.closed_after = time.monotonic() - opened_at

    connection.watcher = asyncio.create_task(watch())
    return connection


async def hold(
    target: Target,
    kind: str,
    connections: int,
    *,
    probes: int = PROBES,
    spacing: float = PROBE_SPACING,
    probe_timeout: float = PROBE_TIMEOUT,
    settle: float = SETTLE_SECONDS,
    answer_wait: float = IDLE_ANSWER_SECONDS,
) -> Hold:
    """Open `connections` slow clients of `kind` to the target, send `probes` normal requests while they are
    open, then close them all (a FIN, as a client that gives up)."""
    host, port = "127.0.0.1", target.port
    started = time.monotonic()
    gate = asyncio.Semaphore(CONNECTING_AT_ONCE)
    opened = [
        c for c in await asyncio.gather(*(_open_one(host, port, kind, started, gate) for _ in range(connections))) if c
    ]
    answered = None
    if kind == "idle":
        deadline = time.monotonic() + answer_wait
        while time.monotonic() < deadline and not all(c.answered for c in opened):
            await asyncio.sleep(0.05)
        answered = sum(c.answered for c in opened)
    result = Hold(kind, connections, len(opened), answered, round(time.monotonic() - started, 2))
    try:
        await asyncio.sleep(settle)
        body = target.expected_body(0)

        async def spaced(index: int) -> Probe:
            await asyncio.sleep(index * spacing)
            return await probe(host, port, body, probe_timeout, sent_after=settle + index * spacing)

        result.probes = list(await asyncio.gather(*(spaced(index) for index in range(probes))))
        closed = [c.closed_after for c in opened if c.closed_after is not None]
        result.closed_by_server = len(closed)
        result.first_closed_after = round(min(closed), 2) if closed else None
        for connection in (c for c in opened if c.closed_after is not None):
            status = connection.said.split(b" ", 2)[1].decode("latin-1") if connection.said[:5] == b"HTTP/" else None
            said = status or ("nothing" if not connection.said else "not HTTP")
            result.closed_with[said] = result.closed_with.get(said, 0) + 1
    finally:
        watchers = [c.watcher for c in opened if c.watcher]
        for connection in opened:
            connection.writer.close()
        for watcher in watchers:
            watcher.cancel()
        await asyncio.gather(*watchers, return_exceptions=True)
    return result


async def recover(target: Target, within: float = RECOVERY_SECONDS) -> float | None:
    """Seconds until the target answers a normal request again, or None if it did not within `within`."""
    started = time.monotonic()
    while (left := within - (time.monotonic() - started)) > 0:
        answer = await probe("127.0.0.1", target.port, target.expected_body(0), min(5.0, left))
        if answer.problem is None:
            return round(time.monotonic() - started, 2)
        await asyncio.sleep(min(0.5, max(0.0, within - (time.monotonic() - started))))
    return None


def slowclient_record(target: Target, problem: str | None) -> SlowClientResult:
    """The record before its level: the target, the proxy in front of it, and why it cannot be trusted (None: it
    answered right)."""
    return SlowClientResult(
        **target.record_fields(),
        via=target.via,
        verified=problem is None,
        problem=problem,
        ok=False,  # judged as it is kept, once its problem is final
    )


def measure_level(
    record: SlowClientResult, target: Target, kind: str, connections: int, threshold: float
) -> SlowClientResult:
    """One level as a record: the hold, then whether the target answers normally once the clients left."""
    measured = asyncio.run(hold(target, kind, connections))
    recovered_after = asyncio.run(recover(target))
    probes = [NormalRequest(p.sent_after, round(p.seconds, 3), p.status, p.problem) for p in measured.probes]
    return replace(
        record,
        kind=measured.kind,
        connections=measured.connections,
        opened=measured.opened,
        answered=measured.answered,
        setup_seconds=measured.setup_seconds,
        probes=probes,
        closed_by_server=measured.closed_by_server,
        first_closed_after=measured.first_closed_after,
        closed_with=measured.closed_with,
        worst_seconds=round(measured.worst_seconds, 2),
        delayed=measured.delayed(threshold),
        recovered=recovered_after is not None,
        recovery_seconds=recovered_after,
    )


def levels(text: str) -> list[int]:
    return sorted(int(level) for level in text.replace(",", " ").split())


OPTIONS = Options(
    "slowclients",
    "python -m bench.modes.slowclients",
    (
        Option.some_of("--scenarios", "SCENARIOS", SCENARIOS, "SCENARIO"),
        Option.out("-slowclients"),
        Option("--levels", "LEVELS", "slow connections per level", {"type": levels, "default": list(LEVELS)}),
        Option("--kinds", None, None, {"nargs": "*", "default": list(KINDS), "choices": KINDS}),
        Option("--threshold", None, "seconds a normal request may take", {"type": float, "default": THRESHOLD_SECONDS}),
    ),
)


def main(argv: list[str] | None = None) -> int:
    arguments = OPTIONS.arguments(argv)
    args = OPTIONS.parser(__doc__).parse_args(arguments)
    results = ResultSet("python -m bench.modes.slowclients", "slowclients", arguments, args.out, suffix="-slowclients")

    # The servers that hold many requests at once: the one-at-a-time targets are stopped by a single slow client.
    targets = [t for s in args.scenarios for t in load_targets(s) if t.load == "full"]
    results.metadata |= {
        "threshold_seconds": args.threshold,
        "levels": args.levels,
        "probes": {
            "per_level": PROBES,
            "settle_seconds": SETTLE_SECONDS,
            "spacing_seconds": PROBE_SPACING,
            "timeout_seconds": PROBE_TIMEOUT,
        },
        "body_bytes": BODY_BYTES,
    }
    progress = Progress(len(targets) * len(args.kinds) * len(args.levels))

    kept: list[SlowClientResult] = []

    def keep(record: SlowClientResult, skipped: int = 0) -> None:
        record = replace(record, ok=record.verified and record.recovered is not False)
        kept.append(record)
        results.add(record)
        progress.done += 1 + skipped

    for scenario in dict.fromkeys(t.scenario for t in targets):
        progress.show(scenario, "building and starting")
        pending = [t for t in targets if t.scenario == scenario]
        with ScenarioStart(results.metadata["packages"]) as start:
            start.up(RunningScenario(scenario))
            while pending:
                target = pending.pop(0)
                progress.show(target.name, "verifying")
                if problem := verify(target, 1.0):
                    keep(slowclient_record(target, problem), len(args.kinds) * len(args.levels) - 1)
                    continue
                kinds = list(args.kinds)
                while kinds:
                    kind = kinds.pop(0)
                    for index, level in enumerate(args.levels):
                        progress.show(target.name, f"{level} slow connections ({kind})")
                        record = measure_level(slowclient_record(target, None), target, kind, level, args.threshold)
                        verdict = "DELAYED" if record.delayed else "answered"
                        print(
                            f"    normal requests: {verdict}, worst {record.worst_seconds} s;"
                            f" {record.closed_by_server} of {record.opened} closed by the server",
                            flush=True,
                        )
                        left = len(args.levels) - 1 - index
                        if not record.recovered:
                            # Nothing after this would measure the slow clients, only the wedge.
                            wedged = f"no normal answer within {RECOVERY_SECONDS:g} s after they closed"
                            keep(replace(record, problem=wedged), left + len(kinds) * len(args.levels))
                            kinds = []
                            break
                        if record.delayed:
                            keep(record, left)
                            break
                        keep(record)
        if start.problem:
            for target in pending:
                keep(slowclient_record(target, start.problem), len(args.kinds) * len(args.levels) - 1)
    failures = sorted({record.target for record in kept if not record.ok})
    renderer.render(results.out, results.finish())
    return results.say(failures, "results.json, results.md")


if __name__ == "__main__":
    sys.exit(main())
