"""Running ApacheBench the tutorial's way and reading its report."""

from __future__ import annotations

import re
from dataclasses import dataclass

from bench.models.percentiles import Percentiles


@dataclass(frozen=True)
class AbResult(Percentiles):
    complete: int
    failed: int  # any of the four kinds below; a non-2xx answer is not one of them
    failed_connect: int
    failed_receive: int
    failed_length: int  # a body whose length differs from the first one's
    failed_exceptions: int
    non2xx: int
    seconds: float
    rps: float
    percentiles_ms: dict[int, float]

    @property
    def failure_kinds(self) -> dict[str, int]:
        return {
            "connect": self.failed_connect,
            "receive": self.failed_receive,
            "length": self.failed_length,
            "exceptions": self.failed_exceptions,
        }


def ab_command(url: str, requests: int, concurrency: int) -> list[str]:
    # The tutorial's command. -r lets ab finish the run after a socket error, which it counts as failed;
    # no -l, so that a body of another length counts as failed too.
    return ["ab", "-r", "-n", str(requests), "-c", str(concurrency), url]


def _number(text: str, label: str) -> float:
    found = re.search(rf"^{re.escape(label)}:\s+([\d.]+)", text, re.MULTILINE)
    if not found:
        raise ValueError(f"no {label!r} in ab's output: {text.strip().splitlines()[-1:] or 'nothing'}")
    return float(found[1])


def parse_ab(text: str) -> AbResult:
    """The figures of a complete ab report; ValueError for an aborted or empty run."""
    # An aborted ab prints its reason and how far it got instead of a report: that is what a reader needs.
    # ab's fatal errors read "<call>: <reason> (<errno>)", the call being e.g. apr_socket_recv or
    # apr_socket_connect(); after too many failed connects it says "Test aborted after 10 failures".
    reasons = r"(?:apr_\w+(?:\(\))?|socket): .+ \(\d+\)|Test aborted after \d+ failures|Total of \d+ requests completed"
    aborted = re.findall(rf"^.*?({reasons})$", text, re.MULTILINE)
    if aborted:
        raise ValueError(f"ab aborted: {'; '.join(aborted)}")
    breakdown = re.search(r"\(Connect: (\d+), Receive: (\d+), Length: (\d+), Exceptions: (\d+)\)", text)
    connect, receive, length, exceptions = map(int, breakdown.groups()) if breakdown else (0, 0, 0, 0)
    non2xx = re.search(r"^Non-2xx responses:\s+(\d+)", text, re.MULTILINE)
    percentiles = {int(p): float(ms) for p, ms in re.findall(r"^\s+(\d+)%\s+(\d+)", text, re.MULTILINE)}
    if 99 not in percentiles:
        raise ValueError("no latency percentiles in ab's output")
    return AbResult(
        complete=int(_number(text, "Complete requests")),
        failed=int(_number(text, "Failed requests")),
        failed_connect=connect,
        failed_receive=receive,
        failed_length=length,
        failed_exceptions=exceptions,
        non2xx=int(non2xx[1]) if non2xx else 0,
        seconds=_number(text, "Time taken for tests"),
        rps=_number(text, "Requests per second"),
        percentiles_ms=percentiles,
    )
