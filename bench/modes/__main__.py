"""`make help`: each target of the Makefile given with its `##` line, and, for a mode that declares its options
(bench/options.py), the make variables that set them, from that declaration."""

from __future__ import annotations

import importlib
import re
import sys
from pathlib import Path

from bench.options import Options

TARGET_LINE = re.compile(r"^([a-z-]+):.*## (.*)$")


def declared(target: str) -> Options | None:
    try:
        mode = importlib.import_module(f"bench.modes.{target}")
    except ModuleNotFoundError:
        return None
    options = getattr(mode, "OPTIONS", None)
    return options if isinstance(options, Options) else None


def main(makefiles: list[str]) -> int:
    for makefile in makefiles:
        for line in Path(makefile).read_text().splitlines():
            found = TARGET_LINE.match(line)
            if not found:
                continue
            target, said = found.groups()
            options = declared(target)
            variables = f" ({options.variables()})" if options else ""
            print(f"  make {target:<10} {said}{variables}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
