"""Each mode's options declared once (bench/options.py): the make variables a reader types reach the mode as its
flags through real make, in the order and form the Makefile wrote them before (the set records that command line),
`make help` lists them from the declaration, and a bad value is the mode's own one-line refusal. No Docker: the
modes refuse before they start anything."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from bench.modes import bookstore, incidents, labs, latency, map, recommend, slowclients, yourapp
from bench.modes.__main__ import page
from bench.options import Options
from bench.pages.render import ROOT

MAKE = ["make", "-s", "-o", ".venv/.requirements-installed", f"PYTHON={sys.executable}"]
DECLARED = {
    mode.OPTIONS.target: mode.OPTIONS
    for mode in (latency, map, recommend, slowclients, labs, bookstore, incidents, yourapp)
}


def make(target: str, *variables: str) -> subprocess.CompletedProcess[str]:
    # No engine: where a variable did not reach its mode, the mode would start a whole run with its defaults; here
    # it stops at its first Docker command instead.
    environment = {**os.environ, "DOCKER_HOST": "unix:///nonexistent/docker.sock"}
    return subprocess.run(
        [*MAKE, target, *variables], cwd=ROOT, env=environment, capture_output=True, text=True, timeout=60
    )


@pytest.mark.parametrize(
    ("target", "variables", "refusal"),
    [
        ("latency", ["SCENARIOS=no-such-scenario"], "argument --scenarios: invalid choice: 'no-such-scenario'"),
        ("latency", ["FRACTIONS=0.5", "RATES=50"], "argument --rates: not allowed with argument --fractions"),
        ("map", ["CPUS=some"], "argument --cpus: invalid"),
        ("recommend", ["REPEAT=twice"], "argument --repeat: invalid int value: 'twice'"),
        ("slowclients", ["LEVELS=many"], "argument --levels: invalid levels value: 'many'"),
        ("labs", ["LABS=late-patch no-such-lab"], "argument --labs: invalid choice: 'no-such-lab'"),
        ("incidents", ["SECONDS=long"], "argument --seconds: invalid float value: 'long'"),
        ("bookstore", ["CLIENTS=10 many"], "argument --clients: invalid int value: 'many'"),
        ("bookstore", ["READS_END_WITH=abort"], "argument --reads-end-with: invalid choice: 'abort'"),
        ("yourapp", ["EXAMPLE=nope"], "argument --example: invalid choice: 'nope'"),
        ("yourapp", ["APP=."], "APP= (the app's folder) and REQUESTS= (its requests file) are needed"),
    ],
)
def test_a_make_variable_reaches_its_mode_as_its_flag(target: str, variables: list[str], refusal: str) -> None:
    refused = make(target, *variables)
    assert refused.returncode != 0 and refusal in refused.stderr, refused.stderr
    assert "Traceback" not in refused.stderr, refused.stderr


def test_the_variables_become_the_flags_the_makefile_wrote(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "argv", ["latency", "--duration", "5"])
    environment = {"MAKELEVEL": "1", "SCENARIOS": "sync-gunicorn nginx-uwsgi", "RATES": "50 100", "OUT": "out",
                   "DELAY": "", "FRACTIONS": " "}  # fmt: skip
    # Words for a list of choices, one argument for a list its own type reads, nothing for an empty variable; what
    # is typed after, after them.
    assert latency.OPTIONS.arguments(None, environment) == [
        "--scenarios", "sync-gunicorn", "nginx-uwsgi", "--out", "out", "--rates", "50 100", "--duration", "5",
    ]  # fmt: skip
    # Not run by make: the command line alone, whatever the environment holds; given arguments: those alone.
    assert latency.OPTIONS.arguments(None, {"RATES": "50"}) == ["--duration", "5"]
    assert latency.OPTIONS.arguments(["--rates", "7"], environment) == ["--rates", "7"]
    # A switch set by any value; the scale always passed, as make's `--scale $(or $(SCALE),1000000)` did.
    monkeypatch.setattr(sys, "argv", ["bookstore"])
    assert bookstore.OPTIONS.arguments(None, {"MAKELEVEL": "1", "SWEEP": "1", "LOADS": "author slow"}) == [
        "--scale", "1000000", "--loads", "author", "slow", "--sweep",
    ]  # fmt: skip


def test_make_help_lists_each_mode_s_variables_from_its_declaration() -> None:
    shown = make("help")
    assert shown.returncode == 0, shown.stderr
    lines = {line.split()[1]: line for line in shown.stdout.splitlines() if line.startswith("  make ")}
    for target, options in DECLARED.items():
        assert lines[target].endswith(f"({options.variables()})"), lines[target]
    assert "DURATION=10 DELAY=1)" in lines["latency"] and 'LEVELS="10 25 50' in lines["slowclients"]


def test_every_variable_readers_used_still_sets_its_option() -> None:
    # The short variables of each target as the Makefile listed them before they were declared.
    before = {
        "latency": "SCENARIOS OUT FRACTIONS RATES DURATION DELAY",
        "map": "TARGETS OUT DELAYS CPUS CLIENTS",
        "recommend": "WAYS REPEAT CLIENTS CPU_CLIENTS ONE_CORE_CLIENTS OUT",
        "slowclients": "SCENARIOS OUT LEVELS",
        "labs": "LABS OUT",
        "incidents": "TARGETS EVENTS REPEAT CLIENTS SECONDS SCALE OUT",
        "bookstore": "SCALE TARGETS LOADS CLIENTS SWEEP REPEAT SECONDS WARM_LIMIT READS_END_WITH LADDER AT_APP_RATE"
        " OUT",
        "yourapp": "EXAMPLE APP REQUESTS CALLABLE SETUP SERVICES REQUIREMENTS PYTHON_VERSION WAYS CLIENTS REPEAT"
        " SECONDS HEALTH OUT",
    }
    for target, variables in before.items():
        options: Options = DECLARED[target]
        assert [option.variable for option in options.options if option.variable] == variables.split(), target


def test_the_docs_table_has_a_row_per_option() -> None:
    table = labs.OPTIONS.table()
    assert table[2:] == [
        f"| `LABS=` | `--labs` | every one | one or more of: {', '.join(labs.LABS)} |",
        "| `OUT=` | `--out` | – | the result set's folder (default results/<time>-labs) |",
    ]


def test_the_options_page_is_its_rendering_from_the_declarations() -> None:
    committed = (ROOT / "docs" / "options.md").read_text()
    assert committed == page([ROOT / "Makefile"]), "docs/options.md differs from the declarations: run `make pages`"
    assert all(f"## make {target}" in committed for target in DECLARED), committed
