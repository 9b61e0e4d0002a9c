"""Every SQL statement one request sends, for the harness to replay with pgbench.

    python -m bookstore.capture GET /author/42
    python capture.py POST /author '{"name": "A", "country_code": "FR", "date_of_birth": "1970-01-01"}'

Runs inside the app's image (same code, same engine settings, the real database from DATABASE_URL), sends the
request through Flask's test client, and prints JSON:
    {"status": 200, "transaction": true, "statements": [{"sql": "...", "parameters": {...}}, ...]}
BEGIN, COMMIT and ROLLBACK are not among the statements: psycopg sends them itself, below SQLAlchemy's events.
"transaction": true says the request ran in one (SQLAlchemy's Session always opens one: BEGIN before its first
statement, ROLLBACK or COMMIT at the end). The Quart port (async_app.py) sends the same statements: it uses the
same models and the same ORM queries, so it has no capture of its own.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from sqlalchemy import event

# The app's modules import each other by their plain names (as the servers load them from /app): put their folder
# first on the path, whether this runs as `python -m bookstore.capture` or as `python capture.py`.
sys.path.insert(0, str(Path(__file__).resolve().parent))
import app as app_module  # noqa: E402


def capture(method: str, path: str, body: str | None = None) -> dict[str, Any]:
    statements: list[dict[str, Any]] = []
    began = False

    def record(conn: Any, cursor: Any, statement: str, parameters: Any, context: Any, executemany: bool) -> None:
        statements.append({"sql": statement, "parameters": parameters})

    def on_begin(conn: Any) -> None:
        nonlocal began
        began = True

    engine = app_module.engine
    event.listen(engine, "before_cursor_execute", record)
    event.listen(engine, "begin", on_begin)
    try:
        client = app_module.app.test_client()
        response = client.open(path, method=method, data=body, content_type="application/json" if body else None)
    finally:
        event.remove(engine, "before_cursor_execute", record)
        event.remove(engine, "begin", on_begin)
    return {"status": response.status_code, "transaction": began, "statements": statements}


def main(argv: list[str]) -> int:
    if len(argv) not in (2, 3):
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    method, path, *body = argv
    print(json.dumps(capture(method.upper(), path, body[0] if body else None), default=str, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
