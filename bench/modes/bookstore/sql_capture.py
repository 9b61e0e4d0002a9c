"""What an app sends Postgres for one request: every statement with its parameters, captured by the app's own
capture tool (`python -m bookstore.capture GET /author/123`) in the target's container. Two captures of the same
endpoint at two values of its one input become a pgbench script (bench/loadgen/pgbench.py)."""

from __future__ import annotations

import json
from typing import Any

from bench.containers.compose import RunningScenario
from bench.loadgen.pgbench import TemplateError


def capture(running: RunningScenario, service: str, *request: str) -> dict[str, Any]:
    result = running.compose("exec", "-T", service, "python", "-m", "bookstore.capture", *request, check=False)
    try:
        return json.loads(result.stdout)
    except ValueError:
        raise TemplateError(
            f"capture of {' '.join(request)} in {service} printed no JSON: {(result.stderr or result.stdout)[-300:]}"
        ) from None
