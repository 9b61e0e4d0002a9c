"""Each mode's options declared once (bench/options.py): the make variables a reader types reach the mode as its
flags through real make, in the order and form the Makefile wrote them before (the set records that command line),
`make help` lists them from the declaration, and a bad value is the mode's own one-line refusal. No Docker: the
modes refuse before they start anything."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys

import pytest

from bench.modes.__main__ import page
from bench.modes.bench import run as bench
from bench.modes.bookstore import run as bookstore
from bench.modes.incidents import run as incidents
from bench.modes.labs import run as labs
from bench.modes.latency import run as latency
from bench.modes.map import run as map
from bench.modes.recommend import run as recommend
from bench.modes.slowclients import run as slowclients
from bench.modes.yourapp import run as yourapp
from bench.options import Options
from bench.pages.render import ROOT
from tests.conftest import MAKE

DECLARED = {
    options.target: options
    for mode in (bench, latency, map, recommend, slowclients, labs, bookstore, incidents, yourapp)
    for options in (mode.OPTIONS, *mode.OPTIONS.others)
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
        ("bench", ["VARIANT=workers=2"], "argument --variant: settings are NAME=VALUE pairs"),
        ("sweep", ["CONCURRENCIES=many"], "argument --sweep: invalid concurrencies value: 'many'"),
        ("overload", ["CLIENT=elsewhere"], "argument --client: invalid choice: 'elsewhere'"),
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
    shared = (
        "SCENARIOS OUT REPEAT RERUN LOADGEN CPU SERVER_HOST CLIENT_HOST DATABASE_HOST BIND DATABASE_BIND"
        " CPUSET_SERVER CPUSET_CLIENT CPUSET_DATABASE CLIENT"
    )
    before = {
        "bench": f"{shared} N C DELAY ALSO VARIANT",
        "sweep": f"{shared} CONCURRENCIES DELAY",
        "overload": f"{shared} LEVELS DELAY",
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


# make bench, sweep and overload: one mode, three targets. Each command line below is the one the Makefile ran
# before the options were declared (`make -n`, recorded for 152 combinations of its variables), after
# `python -m bench.modes.bench`; every variable set at once shows each one's place.
EVERY = {
    "SCENARIOS": "sync-gunicorn nginx-uwsgi", "OUT": "out/dir", "N": "40", "C": "10", "DELAY": "0.5", "CPU": "2",
    "CLIENT": "host", "LOADGEN": "hey", "ALSO": "1000 2000", "REPEAT": "3", "RERUN": "1",
    "VARIANT": "WORKER_CONNECTIONS=1000", "SERVER_HOST": "ssh://a", "CLIENT_HOST": "ssh://b",
    "DATABASE_HOST": "tcp://c:2375", "BIND": "10.0.0.1", "DATABASE_BIND": "10.0.0.2", "CPUSET_SERVER": "0-1",
    "CPUSET_CLIENT": "2", "CPUSET_DATABASE": "3", "CONCURRENCIES": "5 10", "LEVELS": "100 200",
}  # fmt: skip
SHARED = (
    "--scenarios sync-gunicorn nginx-uwsgi --out out/dir --repeat 3 --rerun-unsteady 1 --loadgen hey --cpu 2"
    " --server-host ssh://a --client-host ssh://b --database-host tcp://c:2375 --bind 10.0.0.1 --database-bind"
    " 10.0.0.2 --cpuset-server 0-1 --cpuset-client 2 --cpuset-database 3 --client host"
)
BEFORE = [
    ("bench", {}, "--client auto --cold-build"),
    ("bench", EVERY, f'{SHARED} --cold-build -n 40 -c 10 --delay 0.5 --also "1000 2000" --variant'
     ' "WORKER_CONNECTIONS=1000"'),
    ("bench", {"CLIENT": "auto", "VARIANT": "WORKER_CONNECTIONS=1000 THREADS=8", "ALSO": "1000"},
     '--client auto --cold-build --also "1000" --variant "WORKER_CONNECTIONS=1000 THREADS=8"'),
    ("bench", {"N": "40", "DELAY": "0"}, "--client auto --cold-build -n 40 --delay 0"),
    ("sweep", {}, '--client auto --sweep "10 50 200 500 1000"'),
    ("sweep", EVERY, f'{SHARED} --sweep "5 10" --delay 0.5'),
    ("sweep", {"DELAY": "0.1", "N": "40", "ALSO": "1000"}, '--client auto --sweep "10 50 200 500 1000" --delay 0.1'),
    ("overload", {}, '--client container --overload "1000 2000 3000 5000 7500 10000 15000"'),
    ("overload", EVERY, f'{SHARED} --overload "100 200" --delay 0.5'),
    ("overload", {"CLIENT": "auto", "LEVELS": "1000", "DELAY": "0.1"},
     '--client container --overload "1000" --delay 0.1'),
    ("overload", {"CLIENT": "container"}, '--client container --overload "1000 2000 3000 5000 7500 10000 15000"'),
]  # fmt: skip
# Python for make's PYTHON: the mode run as make runs it, but its ResultSet, the first thing it does after parsing
# its arguments, prints the command line and mode the set would record and ends the run.
RECORDED = (
    "import json, sys; from bench.modes.bench import run as bench;"
    " bench.ResultSet = lambda program, mode, arguments, out: sys.exit(print(json.dumps([mode, arguments])));"
    " sys.argv = sys.argv[2:]; sys.exit(bench.main())"
)


@pytest.mark.parametrize(("target", "variables", "before"), BEFORE)
def test_bench_sweep_and_overload_record_the_command_line_their_recipes_wrote(
    target: str, variables: dict[str, str], before: str
) -> None:
    typed = [f"{name}={value}" for name, value in variables.items()]
    ran = make(target, *typed, f"PYTHON={sys.executable} -c {shlex.quote(RECORDED)}")
    assert ran.returncode == 0, ran.stderr
    assert json.loads(ran.stdout) == [target, shlex.split(before)]


def test_make_ab_still_prints_the_tutorial_s_flags() -> None:
    printed = subprocess.run(
        [*MAKE, "-n", "PYTHON=python", "ab", "S=nginx-uwsgi", "N=20", "C=5", "DELAY=0.1"],
        cwd=ROOT, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert printed.stdout == "python -m bench ab nginx-uwsgi -n 20 -c 5 --delay 0.1\n", printed.stdout


def test_a_target_s_name_after_the_module_is_its_command_line_by_hand_too(monkeypatch: pytest.MonkeyPatch) -> None:
    # Without make, `python -m bench.modes.bench sweep` is `make sweep` with no variable set, whatever the
    # environment holds; a bare command line is the flags typed alone.
    monkeypatch.setattr(sys, "argv", ["bench", "sweep", "--delay", "0.2"])
    assert bench.OPTIONS.arguments(None, {"DELAY": "9"}) == ["--client", "auto", "--sweep", "10 50 200 500 1000",
                                                             "--delay", "0.2"]  # fmt: skip
    monkeypatch.setattr(sys, "argv", ["bench", "--delay", "0.2"])
    assert bench.OPTIONS.arguments(None, {"DELAY": "9"}) == ["--delay", "0.2"]
