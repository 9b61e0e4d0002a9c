"""Tools around the scenarios: the target matrix, running compose, loading with ab, counting threads."""

import sys

# Every module of the harness runs this first. Older Pythons would fail later, on the first name they lack
# (datetime.UTC is 3.11's), with a traceback that does not say why.
if sys.version_info < (3, 11):  # noqa: UP036 (the check is for Pythons the project does not support)
    raise SystemExit(
        f"the harness needs Python 3.11 or later; this is {sys.version.split()[0]} ({sys.executable}):"
        " remove .venv and run make again with a newer python3 first on PATH"
    )
