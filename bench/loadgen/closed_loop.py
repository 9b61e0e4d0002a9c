"""The closed-loop load generators `make bench LOADGEN=ab|hey|wrk|h2load` chooses from.

Each is one module with the same small interface: a command for n requests from c clients at a delay, a parser
of its report into the same figures (complete, failed and the kinds it names, non-2xx, seconds, requests per
second, latency percentiles with at least the 50th and 99th), and its ceiling: the best a perfect server could
score under that tool, for the same load (bench/models/ceiling.py for ab, the module itself for the others).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from bench.loadgen import ab, h2load, hey, wrk
from bench.models import ceiling


class LoadResult(Protocol):
    # Read-only members: each tool's result is a frozen dataclass.
    @property
    def complete(self) -> int: ...

    @property
    def failed(self) -> int: ...

    @property
    def non2xx(self) -> int: ...

    @property
    def seconds(self) -> float: ...

    @property
    def rps(self) -> float: ...

    @property
    def percentiles_ms(self) -> dict[int, float]: ...

    @property
    def failure_kinds(self) -> dict[str, int]: ...

    @property
    def p50_ms(self) -> float: ...

    @property
    def p99_ms(self) -> float: ...


@dataclass(frozen=True)
class LoadGenerator:
    name: str
    package: str  # Debian's, on the host and in its image (bench/loadgen/Dockerfile-<name>)
    keepalive: bool  # ab speaks HTTP/1.0 and opens a connection per request; hey, wrk and h2load reuse theirs
    command: Callable[[str, int, int, float], list[str]]  # url, requests, clients, delay
    parse: Callable[[str], LoadResult]
    ceiling_rps: Callable[[int, int, float, int | None], float]  # requests, clients, delay, server holds at once
    ceiling_note: str  # the ceiling in one paragraph, for the report
    # Whether it loads slow_api alone, the same-run reference: an HTTP/2 client cannot (aiohttp speaks HTTP/1.1).
    reference: bool = True

    @property
    def image(self) -> str:
        return f"flask-playground/{self.name}"


LOADGENS = {
    "ab": LoadGenerator(
        "ab", "apache2-utils", False, lambda url, n, c, delay: ab.ab_command(url, n, c), ab.parse_ab,
        ceiling.ceiling_rps,
        "The ceiling is the best a perfect server could score under ab: ab sends its first request alone and opens"
        " its other connections only after that answer, so n requests take at least"
        " delay x (1 + ceil((n - 1) / c')), where c' is the smaller of ab's clients and what the server holds at"
        " once. Efficiency is requests per second over that ceiling.",
    ),
    "hey": LoadGenerator(
        "hey", "hey", True, hey.hey_command, hey.parse_hey, hey.ceiling_rps,
        "The ceiling is the best a perfect server could score under hey: hey opens its c connections at once and"
        " each sends n / c requests (rounded down) one after the other, so the m = c x floor(n / c) requests take"
        " at least delay x ceil(m / c'), where c' is the smaller of hey's clients and what the server holds at"
        " once. Efficiency is requests per second over that ceiling.",
    ),
    "wrk": LoadGenerator(
        "wrk", "wrk", True, wrk.wrk_command, wrk.parse_wrk, wrk.ceiling_rps,
        "The ceiling is the best a server at the delay could score under wrk: wrk keeps its c connections busy"
        " for D = ceil(delay x ceil(n / c)) whole seconds and counts only the answers in by then, so the round in"
        " progress at D is lost: c' x (ceil(D / delay) - 1) / D requests per second, where c' is the smaller of"
        " wrk's connections and what the server holds at once (180 for 200 connections, 10 s, 1 s delay). A"
        " server within a few milliseconds of the delay may get its last round in before wrk stops, up to 10 / 9"
        " of this ceiling: efficiencies under wrk move by whole rounds."
        " Efficiency is requests per second over that ceiling.",
    ),
    "h2load": LoadGenerator(
        "h2load", "nghttp2-client", True, h2load.h2load_command, h2load.parse_h2load, h2load.ceiling_rps,
        "The ceiling is the best a perfect server could score under h2load, which speaks HTTP/2 (h2c on http://):"
        " h2load opens its c connections at once and shares the n requests among them, each sent one after the"
        " other on its connection, so they take at least delay x ceil(n / c'), where c' is the smaller of h2load's"
        " clients and what the server holds at once. Efficiency is requests per second over that ceiling.",
        reference=False,
    ),
}  # fmt: skip
