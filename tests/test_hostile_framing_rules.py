"""The hostile-framing checks' own rules, against real local servers: a wrong answer fails at once, and an answer
only late fails as an assertion, which a test made again where the other parts had the CPU may make again."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator

import pytest

from tests import hostile_framing
from tests.hostile_framing import CASES, TUTORIAL_APP, assert_framing_answered, failures

NUL_PATH = tuple(case for case in CASES if case.name == "path NUL escape")


def serving(answer: bytes | None) -> Iterator[str]:
    """A server on 127.0.0.1 that reads each request and sends `answer` (None: sends nothing, holds the connection)."""
    listener = socket.create_server(("127.0.0.1", 0))
    held: list[socket.socket] = []

    def serve() -> None:
        while True:
            try:
                connection, _ = listener.accept()
            except OSError:
                return
            held.append(connection)
            connection.recv(65536)
            if answer is not None:
                connection.sendall(answer)
                connection.close()

    threading.Thread(target=serve, daemon=True).start()
    yield f"http://127.0.0.1:{listener.getsockname()[1]}/"
    listener.close()
    for connection in held:
        connection.close()


@pytest.fixture
def silent() -> Iterator[str]:
    yield from serving(None)


@pytest.fixture
def failing() -> Iterator[str]:
    yield from serving(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")


@pytest.fixture
def quick_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(hostile_framing, "ANSWER_TIMEOUT", 0.3)


def test_a_server_that_stays_silent_is_only_late(silent: str, quick_timeout: None) -> None:
    found = failures(silent, TUTORIAL_APP, NUL_PATH)
    assert [late for _, late in found] == [True, True], found  # the case, then the plain request
    with pytest.raises(AssertionError, match="no answer and no close within 0.3 s"):
        assert_framing_answered({"silent": silent}, TUTORIAL_APP, NUL_PATH)


def test_a_5xx_is_wrong_whatever_the_time(failing: str, quick_timeout: None) -> None:
    found = failures(failing, TUTORIAL_APP, NUL_PATH)
    assert [late for _, late in found] == [False, False], found
    with pytest.raises(pytest.fail.Exception, match="status 502"):
        assert_framing_answered({"failing": failing}, TUTORIAL_APP, NUL_PATH)
