"""Fixtures shared by the tests: a real slow_api on a free loopback port, and a small HTTP load client."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import pytest
import requests

from bench.scenarios import ROOT


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@dataclass
class SlowApiProcess:
    """slow_api/api.py running as a real process, which a test may freeze (SIGSTOP) or kill."""

    process: subprocess.Popen[bytes]
    url: str

    def freeze(self) -> None:
        self.process.send_signal(signal.SIGSTOP)

    def thaw(self) -> None:
        self.process.send_signal(signal.SIGCONT)

    def stop(self) -> None:
        self.thaw()
        self.process.terminate()
        self.process.wait(timeout=10)


@pytest.fixture
def slow_api() -> Iterator[SlowApiProcess]:
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, str(ROOT / "slow_api" / "api.py")],
        env={**os.environ, "PORT": str(port)},
        stdout=subprocess.DEVNULL,
    )
    server = SlowApiProcess(process, f"http://127.0.0.1:{port}/")
    deadline = time.monotonic() + 15
    while True:
        try:
            requests.get(server.url, params={"delay": 0}, timeout=1).raise_for_status()
            break
        except requests.RequestException:
            if process.poll() is not None or time.monotonic() > deadline:
                server.stop()
                raise RuntimeError("slow_api did not start") from None
            time.sleep(0.1)
    yield server
    if process.poll() is None:
        server.stop()


@dataclass
class Answer:
    status: int
    body: str
    seconds: float


def fetch(url: str, timeout: float = 30) -> Answer:
    started = time.monotonic()
    response = requests.get(url, timeout=timeout)
    return Answer(response.status_code, response.text, time.monotonic() - started)


def load(url: str, requests_total: int, concurrency: int) -> tuple[float, list[Answer]]:
    """Send `requests_total` GETs from `concurrency` threads; return the wall time and every answer."""
    started = time.monotonic()
    with ThreadPoolExecutor(max_workers=concurrency) as pool:
        answers = list(pool.map(lambda _: fetch(url), range(requests_total)))
    return time.monotonic() - started, answers
