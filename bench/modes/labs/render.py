"""A `make labs` set rendered from OUT/results.json alone: a table per lab, broken and fixed side by side, each
with the command that ran it (docs/labs.md explains each lab)."""

from __future__ import annotations

import shlex
from pathlib import Path

from bench.modes.labs.record import LabResult
from bench.render import html_page, shared
from bench.results.store import LoadedSet

# What results.md shows of each lab, column by column: (heading, the key of the lab's figure, LabResult.figure).
AT_ONCE = [
    ("requests at once", "n"),
    ("delay, s", "delay"),
    ("answered", "answered"),
    ("all answered after, s", "elapsed_s"),
    ("delays", "delays"),
    ("serial ratio", "serial_ratio"),
    ("MonkeyPatchWarnings", "monkeypatch_warnings"),
]
COLUMNS = {
    "late-patch": AT_ONCE,
    "blocking-call": AT_ONCE,
    "pool-default": [
        ("requests at once", "n"), ("answered", "answered"), ("each round took, s", "elapsed_s"),
        ("took 1.5 delays or more", "slow_requests"), ("connections opened", "connections_opened"),
        ("pool-full warnings", "pool_full_warnings"),
    ],
    "small-backlog": [
        ("connections", "n"), ("answered", "answered"), ("failures", "failures"),
        ("connect over 1 s", "connects_over_1s"), ("longest connect, s", "connect_max_s"),
        ("p50, s", "p50_s"), ("longest, s", "max_s"),
        ("ListenOverflows", "ListenOverflows"), ("ListenDrops", "ListenDrops"),
    ],
    "cpu-starvation": [
        ("ms per unit", "cpu_ms_per_unit"), ("heavy request, s", "heavy_s"), ("cheap requests", "cheap"),
        ("cheap p50, s", "cheap_p50_s"), ("cheap longest, s", "cheap_max_s"), ("held up > 0.3 s", "cheap_held_up"),
        ("each cheap request, s", "cheap_s"),
    ],
}  # fmt: skip


def cell(value: object) -> str:
    if isinstance(value, dict):
        return ", ".join(f"{count} {kind}" for kind, count in value.items()) or "none"
    if isinstance(value, list):
        return ", ".join(str(item) for item in value)
    return "–" if value is None else str(value)


def markdown(loaded: LoadedSet) -> str:
    """results.md: a table per lab, each variant a row, and the command of each."""
    meta, every = loaded.metadata, loaded.records_of(LabResult)
    lines = shared.head("Failure labs", meta, shared.took(meta) + " docs/labs.md explains each lab.")
    for lab in dict.fromkeys(record.lab for record in every):
        records = [record for record in every if record.lab == lab]
        columns = COLUMNS[lab]
        lines += ["", f"## {lab}", "", f"`docker compose -f labs/{lab}.yml up --build`", ""]
        lines += ["| target | variant | setting | " + " | ".join(heading for heading, _ in columns) + " |"]
        lines += ["|---" * (3 + len(columns)) + "|"]
        for record in records:
            values = [record.target, record.variant, record.setting, *(record.figure(k) for _, k in columns)]
            lines += ["| " + " | ".join(cell(value) for value in values) + " |"]
        rounds = records[0].figure("per_round")
        if isinstance(rounds, list):
            lines += ["", f"{len(rounds)} rounds in a row, one figure per round."]
        lines += ["", "Commands:", ""]
        # Each record keeps its own command; shown from this folder, which `docker run --volume` needs absolute.
        root = meta.extra["root"]
        commands = [(record.target, shlex.join(record.commands[0]).replace(root, "$PWD")) for record in records]
        lines += [f"- {target}: `{command}`" for target, command in commands]
    return "\n".join(lines) + "\n"


def render(out: Path, loaded: LoadedSet) -> None:
    """results.md, which is the page: index.html shows it."""
    (out / "results.md").write_text(markdown(loaded))
    html_page.from_markdown(out, loaded.metadata, loaded.mode)
