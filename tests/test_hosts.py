"""What the harness needs of the host, checked without Docker: the Python it runs on, and the open-file limit
where the system refuses the one it asks for (macOS caps it per process)."""

from __future__ import annotations

import resource
import sys

import pytest

from bench.containers.scenarios import ROOT
from bench.measure import resultset


def test_an_older_python_stops_with_one_line_saying_why(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "version_info", (3, 10, 14, "final", 0))
    source = (ROOT / "bench" / "__init__.py").read_text()
    with pytest.raises(SystemExit, match=r"^the harness needs Python 3\.11 or later; this is ") as stopped:
        exec(compile(source, "bench/__init__.py", "exec"), {})
    assert "\n" not in str(stopped.value)


def test_the_file_limit_is_the_highest_the_system_allows(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """As macOS does above kern.maxfilesperproc (10240 by default): setrlimit raises ValueError, the hard limit
    says unlimited."""
    limits = {"now": (256, resource.RLIM_INFINITY)}

    def setrlimit(kind: int, pair: tuple[int, int]) -> None:
        if pair[0] > 10240:
            raise ValueError("current limit exceeds maximum limit")
        limits["now"] = pair

    monkeypatch.setattr(resource, "getrlimit", lambda kind: limits["now"])
    monkeypatch.setattr(resource, "setrlimit", setrlimit)
    assert resultset.raise_file_limit() == 10240
    assert limits["now"] == (10240, resource.RLIM_INFINITY)
    assert capsys.readouterr().out == (
        "open files: this system allows 10240 per process, not 65536: loads of more clients will fail\n"
    )


def test_a_file_limit_already_high_enough_is_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(resource, "getrlimit", lambda kind: (100000, 100000))
    monkeypatch.setattr(resource, "setrlimit", lambda kind, pair: pytest.fail("nothing to raise"))
    assert resultset.raise_file_limit() == 100000
    monkeypatch.setattr(resource, "getrlimit", lambda kind: (1024, 4096))
    monkeypatch.setattr(resource, "setrlimit", lambda kind, pair: None)
    assert resultset.raise_file_limit() == 4096
