"""The reader's WSGI app as every server imports it: `yourapp_entry:application`, whatever YOURAPP_CALLABLE names
(`module:app`, or a factory called as `module:create_app()`), so each way's command is the same for every app.

`python -m yourapp_entry` imports it once and says in one line what went wrong: the harness runs it before a way
starts, so that an app that does not import, or a factory that raises, is a line and not a server's traceback."""

from __future__ import annotations

import ast
import importlib
import os
import sys
from typing import Any


def load(spec: str) -> Any:
    module_name, _, expression = spec.partition(":")
    module = importlib.import_module(module_name)
    expression = expression or "app"
    name, call, rest = expression.partition("(")
    found = getattr(module, name.strip())
    if not call:
        return found
    # Arguments as literals only, as Flask's own `--app 'module:create_app("x")'` reads them.
    arguments = ast.literal_eval(f"({rest.rstrip().removesuffix(')')},)") if rest.strip(") ") else ()
    return found(*arguments)


def main() -> int:
    spec = os.environ.get("YOURAPP_CALLABLE", "app:app")
    try:
        app = load(spec)
    # Any failure of the reader's code, SystemExit included, becomes the one line.
    except BaseException as error:  # noqa: BLE001
        where = ""
        trace = error.__traceback__
        while trace is not None:
            where = f" ({trace.tb_frame.f_code.co_filename}:{trace.tb_lineno})"
            trace = trace.tb_next
        print(f"{spec}: {type(error).__name__}: {error}{where}".splitlines()[0], file=sys.stderr)
        return 1
    if not callable(app):
        print(f"{spec}: {type(app).__name__} is not a WSGI callable", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
else:
    application = load(os.environ.get("YOURAPP_CALLABLE", "app:app"))
