"""`make help`: each target of the Makefile given with its `##` line, and, for a mode that declares its options
(bench/options.py), the make variables that set them, from that declaration. With `--page`, docs/options.md: each
such mode's options as a table, from the same declarations (`make pages` writes it)."""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import re
import sys
from collections.abc import Iterator
from pathlib import Path

from bench.options import Options

TARGET_LINE = re.compile(r"^([a-z-]+):.*## (.*)$")


def declared(target: str) -> Options | None:
    """The target's declaration: its mode's, or, for a target that runs another's mode (`make sweep`), the one
    among that mode's others."""
    for module in pkgutil.iter_modules([str(Path(__file__).parent)]):
        # Each mode is a room (a package) whose run is run.py.
        name = f"bench.modes.{module.name}.run"
        mode = None if module.name.startswith("_") or not module.ispkg else importlib.import_module(name)
        options = getattr(mode, "OPTIONS", None)
        if isinstance(options, Options):
            found = {each.target: each for each in (options, *options.others)}.get(target)
            if found:
                return found
    return None


def targets(makefiles: list[Path]) -> Iterator[tuple[str, str, Options | None]]:
    for makefile in makefiles:
        for line in makefile.read_text().splitlines():
            found = TARGET_LINE.match(line)
            if found:
                target, said = found.groups()
                yield target, said, declared(target)


def help_lines(makefiles: list[Path]) -> list[str]:
    return [
        f"  make {target:<10} {said}" + (f" ({options.variables()})" if options else "")
        for target, said, options in targets(makefiles)
    ]


def page(makefiles: list[Path]) -> str:
    lines = [
        "# The options of each make target",
        "",
        "Written by `make pages` from each mode's declaration of its options (`OPTIONS` in its run,",
        "`bench/modes/<target>/run.py`), from which its `--help` and `make help` come too. Set an option with its",
        'make variable (`make latency RATES="50 100"`) or, running the module yourself, with its flag. A variable',
        "left empty is an option not given: the mode's default. An option without a variable is on the command line",
        "only; one whose default is *always* is on its target's command line always. `make bench`, `sweep` and",
        "`overload` run one mode (`python -m bench.modes.bench`), each target with its own options. `make ab` (the",
        "tutorial's ab command, `python -m bench ab`) takes `N=`, `C=` and `DELAY=` as its `make help` line says.",
    ]
    for target, said, options in targets(makefiles):
        if options:
            lines += ["", f"## make {target}", "", f"{said[0].upper()}{said[1:]}.", "", *options.table()]
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.modes", description=__doc__)
    parser.add_argument("makefiles", nargs="+", type=Path)
    parser.add_argument("--page", type=Path, help="write the options page there instead of printing the help")
    args = parser.parse_args(argv)
    if args.page:
        args.page.write_text(page(args.makefiles))
    else:
        print("\n".join(help_lines(args.makefiles)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
