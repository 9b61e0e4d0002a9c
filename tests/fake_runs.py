"""Stand-ins for what a mode's main() starts, so that a test runs main() without Docker and reads what it wrote: a
result set with the test's metadata, and a scenario start whose `up` each test's subclass says."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Self

from bench.measure.resultset import ResultSet


def result_set_with(metadata: dict[str, Any]) -> type[ResultSet]:
    """A ResultSet that writes to the folder it is given, with `metadata` for the machine's and the packages'."""

    class Unrun(ResultSet):
        def __init__(self, program: str, mode: str, arguments: list[str], out: Path | None, suffix: str = "") -> None:
            self.out, self.records, self.written, self.started = out or Path(), [], [], time.monotonic()
            self.metadata = metadata | {"packages": {}}

    return Unrun


class FakeStart:
    """ScenarioStart without an engine: a subclass says what `up` and the exit do."""

    def __init__(self, packages: dict[str, str]) -> None:
        self.problem: str | None = None

    def __enter__(self) -> Self:
        return self
