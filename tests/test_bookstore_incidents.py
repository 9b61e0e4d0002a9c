"""`make incidents` on the bookstore: writes acknowledged under an event are never lost. Apart from
tests/test_incidents.py so that it runs behind, beside the bookstore's other files (tests/in_docker.py): what it
checks is a count in Postgres, which holds with another test running."""

from __future__ import annotations

import argparse
from typing import Any

import pytest

from tests.cpu_share import PremiseNotMet, where_the_cpu_was_there
from tests.incident_runs import measured

# The bookstore's small data set (conftest.py's small_volume) and a load with writes: 20 clients, 0.1 s apart.
SCALE = 2100
WRITING = argparse.Namespace(clients=20, delay=0.1, seconds=6.0, event_at=2.0, scale=SCALE)


def with_writes_to_count(target: str, event: str) -> dict[str, Any]:
    """The event under the writing load, once the load served enough to count: reads and writes around the event and
    more than 10 writes acknowledged (killed for good at 2 s, on 1.3 cores behind the others' loads, a container
    acknowledged 5)."""
    record = measured(target, event, load=WRITING)
    if record["writes_acknowledged"] <= 10 or record["answered"] <= 100:
        raise PremiseNotMet(f"{record['writes_acknowledged']} writes acknowledged, {record['answered']} answered")
    return record


@pytest.mark.docker
@pytest.mark.parametrize(
    ("target", "event"),
    [
        *(("bookstore-gunicorn-gevent", event) for event in
          ("reload", "kill-worker", "kill-container", "recreate", "max-requests-jitter")),
        ("bookstore-gunicorn-sync", "kill-worker"),
    ],
)  # fmt: skip
def test_every_acknowledged_write_survives_the_event(
    engine_processes_seen: None, small_volume: None, target: str, event: str
) -> None:
    """The bookstore under 10 % writes (its one gevent process, and a worker of its thread server): whatever the event
    does to the requests in flight, every write answered 201 is in Postgres afterwards, and a stored write that was
    not acknowledged can only be one in flight (at most one per client)."""
    record = where_the_cpu_was_there(lambda: with_writes_to_count(target, event))
    assert record["writes_lost"] == 0, record
    assert record["writes_found"] >= record["writes_acknowledged"], record
    assert record["writes_unacknowledged"] <= WRITING.clients, record
    # Only the container killed outright stays down.
    assert record["serves_after"] == (event != "kill-container"), record
