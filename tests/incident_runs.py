"""One event of `make incidents` on a small load, as the tests in Docker run it (tests/test_incidents.py in front,
tests/test_incidents_lossless.py behind)."""

from __future__ import annotations

import argparse
import dataclasses

from bench.modes.incidents import run as incidents

# A small load: 50 clients, 8 s, the event 3 s in. Enough for a steady rate before and 5 s to get back after.
SMALL = argparse.Namespace(clients=50, delay=0.5, seconds=8.0, event_at=3.0)


def measured(target: str, event: str, load_seconds: float | None = None, load: argparse.Namespace = SMALL) -> dict:
    """One run of the event on `load` (the small one unless a test gives its own); `load_seconds` shortens an event's
    own longer load where the test needs less of it than the committed set."""
    chosen = incidents.EVENTS[event]
    if load_seconds:
        chosen = dataclasses.replace(chosen, load_seconds=load_seconds)
    record = incidents.run_one(target, chosen, load, 1, {}).to_json()  # as results.json has it
    assert record.get("verified") and "sent" in record and not record["problem"], record.get("problem")
    back = record.get("recovery_s")  # none where the event has no moment (max-requests)
    writes = f", writes {record['writes_acknowledged']}" if "writes_acknowledged" in record else ""
    print(f"{target} / {event}: sent {record['sent']}, lost {record['failed_by_kind']}, back {back}{writes}")
    return record
