"""What every result page shares, whatever the mode: the heading with the command and the machine, the list of
packages, the chart's footer and how a chart is saved, a Markdown table, and the few cells every table writes the
same way (a target's label, how many requests it holds at once, a throughput)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")  # files only, no display
import matplotlib.pyplot as plt  # noqa: E402


def head(title: str, metadata: dict[str, Any], after: str = "") -> list[str]:
    """The first lines of every results.md: its title, the command that made the set, and the machine it ran on
    (`after` ends that line: how long the run took, where to read more)."""
    return [
        f"# {title}",
        "",
        f"`{metadata['command']}`",
        "",
        f"{metadata['date']}, git {metadata['git_commit']}: {cores(metadata)}, Linux {metadata['kernel']},"
        f" Docker {metadata['docker_version']}, Compose {metadata['compose_version']}.{after}",
    ]


def cores(metadata: dict[str, Any]) -> str:
    """'2 cores', and the CPU's model where the set recorded it (sets made before it was recorded did not)."""
    model = metadata.get("cpu_model")
    return f"{metadata['cpu_count']} cores" + (f" ({model})" if model else "")


def read_through_the_engine(records: list[dict[str, Any]]) -> str:
    """A sentence for the page where some servers' processes were read through their engine, not on the harness's
    machine (Docker Desktop, another machine): which, and through what. Empty where all were read here."""
    through: dict[str, set[str]] = {}
    for record in records:
        where = record.get("sampled_on", "this machine")
        if where != "this machine":
            through.setdefault(where.removeprefix("through the engine: "), set()).add(record["target"])
    if not through:
        return ""
    everyone = {record["target"] for record in records}
    said = [
        f"{'every target' if targets == everyone else ', '.join(sorted(targets))} (`{cli}`)"
        for cli, targets in sorted(through.items())
    ]
    return f" Read through the engine, not on this machine: the processes of {'; '.join(said)}."


def took(metadata: dict[str, Any]) -> str:
    return f" Took {metadata['minutes']} min." if metadata.get("minutes") else ""


def packages(metadata: dict[str, Any]) -> list[str]:
    """The last lines of every results.md: the packages each image held."""
    listed = "\n".join(f"- `{image}`: {' '.join(names)}" for image, names in metadata["packages"].items())
    return ["Packages in the images:", "", listed, ""]


def markdown_table(header: list[str] | tuple[str, ...], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    # A "|" in a cell (an unexpected body, a Docker error) would otherwise start a new column.
    lines += ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def footer(figure: plt.Figure, metadata: dict[str, Any]) -> None:
    """Every chart says when, on how many cores and by which command it was measured: it travels without its page."""
    figure.text(0.01, 0.005, f"{metadata['date']}, {cores(metadata)}: {metadata['command']}", fontsize=7)


def save(figure: plt.Figure, metadata: dict[str, Any], path: Path) -> None:
    footer(figure, metadata)
    figure.tight_layout(rect=(0, 0.03, 1, 1))  # room for the footer
    figure.savefig(path, dpi=110)
    plt.close(figure)


def rps(value: float) -> str:
    return f"{value:.2f}" if value < 10 else f"{value:.1f}"


def label(record: dict[str, Any]) -> str:
    name = f"{record['scenario']} / {record['target']}" if record["scenario"] != record["target"] else record["target"]
    return f"{name}, {record['c']} clients"


def per_worker(record: dict[str, Any]) -> int | None:
    """Requests one worker holds at once: its threads, or its greenlets; None for unbounded (asyncio, a thread
    per request)."""
    return record["threads_per_worker"] if record["mode"] == "sync" else record["gevent_cores"]


def at_once(record: dict[str, Any]) -> str:
    """How many requests a target holds at once, as its settings say: "4 x 50 threads", "1 x unbounded tasks"."""
    each = per_worker(record)
    unit = {"sync": "threads", "gevent": "greenlets"}.get(record["mode"], "tasks")
    return f"{record['workers']} x {each if each is not None else 'unbounded'} {unit}"


def holds_at_once(record: dict[str, Any]) -> float:
    """The number behind at_once, to sort by: unbounded sorts last."""
    each = per_worker(record)
    return record["workers"] * each if each is not None else float("inf")


STEADY = "CPU steady"  # the column of sets whose measurements were probed for the machine's speed


def probe_verdict(record: dict[str, Any]) -> bool | None:
    """Whether the CPU kept its speed around the record's measurement; None where it was not judged."""
    verdict: bool | None = (record.get("cpu_probe") or {}).get("steady")
    return verdict


def steadiness(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """How many of a row's runs kept the CPU's speed (the harness probes it around each measurement), and the most
    the probe moved in any of them. Nothing for sets from before the probe."""
    probed = [run for run in runs if probe_verdict(run) is not None]
    if not probed:
        return {}
    moved = [max(run["cpu_probe"]["moved"].values()) for run in probed if run["cpu_probe"]["moved"]]
    return {"steady_runs": sum(probe_verdict(run) is True for run in probed), "probed_runs": len(probed),
            "cpu_moved": max(moved, default=None)}  # fmt: skip


def steady_cell(record: dict[str, Any]) -> str:
    """yes, or no and by how much the probe moved; with repeats, how many of the runs were steady; – unprobed."""
    if "probed_runs" not in record:
        return "–"
    steady, runs, moved = record["steady_runs"], record["probed_runs"], record.get("cpu_moved")
    by = f" (x{moved:.2f})" if moved is not None and steady < runs else ""
    if runs == 1:
        return "yes" if steady else f"no{by}"
    return f"{steady} of {runs}{by}"
