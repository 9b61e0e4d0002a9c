"""One scenario started for a mode's measurements, the same way in every mode: brought up, the interpreter and
packages of its images recorded in the run's metadata, torn down at the end. A scenario that fails, at its start or
while it is measured, ends its block, not the run: the mode writes its "did not start" records from `problem` and
goes on with the next scenario."""

from __future__ import annotations

from contextlib import ExitStack
from types import TracebackType
from typing import TypeVar

from bench.containers.compose import RunningScenario, ScenarioError
from bench.measure.server_facts import image_packages

Scenario = TypeVar("Scenario", bound=RunningScenario)


class ScenarioStart:
    """A context manager around one scenario's measurements:

        with ScenarioStart(results.metadata["packages"]) as start:
            running = start.up(RunningScenario(scenario))
            ...  # the scenario's records
        if start.problem:
            ...  # a record, with `start.problem`, for each target it did not measure

    The scenario is made and started inside the block, so that one that cannot even be set up (a roles override that
    Compose refuses) ends the block as one that does not come up does. A ScenarioError (and the errors in `also`)
    leaves the block with the scenario torn down; `error` keeps it, and nothing else is caught."""

    def __init__(self, packages: dict[str, list[str]], also: tuple[type[Exception], ...] = ()) -> None:
        self.packages = packages  # the run's metadata["packages"], which every start adds to
        self.ends: tuple[type[Exception], ...] = (ScenarioError, *also)
        self.error: Exception | None = None
        self.stack = ExitStack()

    def __enter__(self) -> ScenarioStart:
        return self

    def up(self, scenario: Scenario) -> Scenario:
        """The scenario up and healthy (its __enter__), its images' packages recorded; down when the block ends."""
        self.stack.enter_context(scenario)
        self.packages |= image_packages(scenario)
        return scenario

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> bool:
        self.stack.__exit__(kind, error, trace)  # down before the mode writes what the scenario did not measure
        if isinstance(error, self.ends):
            self.error = error
            return True
        return False

    @property
    def reason(self) -> str | None:
        """Why the scenario ended early, in one line (where docker says why, for a command that failed); None when
        it did not."""
        if self.error is None:
            return None
        return self.error.in_one_line() if isinstance(self.error, ScenarioError) else str(self.error)

    @property
    def problem(self) -> str | None:
        """The problem of each record the scenario could not give: "did not start: " and the reason."""
        return None if self.reason is None else f"did not start: {self.reason}"
