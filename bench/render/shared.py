"""What every result page shares, whatever the mode: the heading with the command and the machine, the list of
packages, the chart's footer and how a chart is saved, a Markdown table, and the few cells every table writes the
same way (how many requests a target holds at once, a throughput, how steady the CPU was)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import matplotlib

from bench.results.records import CpuProbe, Metadata, Record

matplotlib.use("Agg")  # files only, no display
import matplotlib.pyplot as plt  # noqa: E402


def head(title: str, metadata: Metadata, after: str = "") -> list[str]:
    """The first lines of every results.md: its title, the command that made the set, and the machine it ran on
    (`after` ends that line: how long the run took, where to read more)."""
    return [
        f"# {title}",
        "",
        f"`{metadata.command}`",
        "",
        f"{metadata.date}, git {metadata.git_commit}: {cores(metadata)}, Linux {metadata.kernel},"
        f" Docker {metadata.docker_version}, Compose {metadata.compose_version}.{after}",
    ]


def cores(metadata: Metadata) -> str:
    """'2 cores', and the CPU's model where the set recorded it (sets made before it was recorded did not)."""
    model = metadata.cpu_model
    return f"{metadata.cpu_count} cores" + (f" ({model})" if model else "")


class Sampled(Protocol):
    """A record whose server's processes were read during its load: on this machine, or through their engine."""

    @property
    def target(self) -> str: ...

    @property
    def sampled_on(self) -> str | None: ...


def read_through_the_engine(records: Sequence[Sampled]) -> str:
    """A sentence for the page where some servers' processes were read through their engine, not on the harness's
    machine (Docker Desktop, another machine): which, and through what. Empty where all were read here."""
    through: dict[str, set[str]] = {}
    for record in records:
        where = record.sampled_on or "this machine"
        if where != "this machine":
            through.setdefault(where.removeprefix("through the engine: "), set()).add(record.target)
    if not through:
        return ""
    everyone = {record.target for record in records}
    said = [
        f"{'every target' if targets == everyone else ', '.join(sorted(targets))} (`{cli}`)"
        for cli, targets in sorted(through.items())
    ]
    return f" Read through the engine, not on this machine: the processes of {'; '.join(said)}."


def took(metadata: Metadata) -> str:
    return f" Took {metadata.minutes} min." if metadata.minutes else ""


def packages(metadata: Metadata) -> list[str]:
    """The last lines of every results.md: the packages each image held."""
    listed = "\n".join(f"- `{image}`: {' '.join(names)}" for image, names in metadata.packages.items())
    return ["Packages in the images:", "", listed, ""]


def markdown_table(header: list[str] | tuple[str, ...], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    # A "|" in a cell (an unexpected body, a Docker error) would otherwise start a new column.
    lines += ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def footer(figure: plt.Figure, metadata: Metadata) -> None:
    """Every chart says when, on how many cores and by which command it was measured: it travels without its page."""
    figure.text(0.01, 0.005, f"{metadata.date}, {cores(metadata)}: {metadata.command}", fontsize=7)


def save(figure: plt.Figure, metadata: Metadata, path: Path) -> None:
    footer(figure, metadata)
    figure.tight_layout(rect=(0, 0.03, 1, 1))  # room for the footer
    figure.savefig(path, dpi=110)
    plt.close(figure)


def rps(value: float) -> str:
    return f"{value:.2f}" if value < 10 else f"{value:.1f}"


def at_once(record: Record) -> str:
    """How many requests a target holds at once, as its settings say: "4 x 50 threads", "1 x unbounded tasks"."""
    each = record.per_worker()
    unit = {"sync": "threads", "gevent": "greenlets"}.get(record.mode, "tasks")
    return f"{record.workers} x {each if each is not None else 'unbounded'} {unit}"


def holds_at_once(record: Record) -> float:
    """The number behind at_once, to sort by: unbounded sorts last."""
    each = record.per_worker()
    return record.workers * each if each is not None else float("inf")


STEADY = "CPU steady"  # the column of sets whose measurements were probed for the machine's speed


@dataclass(frozen=True)
class Steadiness:
    """Of a row's runs: how many the CPU probe judged, how many of those kept the CPU's speed, and the most the probe
    moved in any of them."""

    steady_runs: int
    probed_runs: int
    cpu_moved: float | None


def steadiness(probes: Iterable[CpuProbe | None]) -> Steadiness | None:
    """How steady the CPU was over a row's runs (the harness probes it around each measurement); None for sets from
    before the probe."""
    judged = [probe for probe in probes if probe is not None and probe.steady is not None]
    if not judged:
        return None
    moved = [max(probe.moved.values()) for probe in judged if probe.moved]
    return Steadiness(sum(probe.steady is True for probe in judged), len(judged), max(moved, default=None))


def steadiness_known(probe: CpuProbe | None) -> bool:
    """Whether the CPU probe around a measurement says if the CPU kept its speed (older sets did not judge it)."""
    return probe is not None and probe.steady is not None


def steady_cell(steadiness: Steadiness | None) -> str:
    """yes, or no and by how much the probe moved; with repeats, how many of the runs were steady; – unprobed."""
    if steadiness is None:
        return "–"
    steady, runs, moved = steadiness.steady_runs, steadiness.probed_runs, steadiness.cpu_moved
    by = f" (x{moved:.2f})" if moved is not None and steady < runs else ""
    if runs == 1:
        return "yes" if steady else f"no{by}"
    return f"{steady} of {runs}{by}"
