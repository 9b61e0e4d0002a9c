"""`make incidents` on the bookstore: writes acknowledged under an event are never lost. Apart from
tests/test_incidents.py so that it runs behind, beside the bookstore's other files (tests/in_docker.py): what it
checks is a count in Postgres, which holds with another test running."""

from __future__ import annotations

import argparse

import pytest

from tests.incident_runs import measured

# The bookstore's small data set (conftest.py's small_volume) and a load with writes: 20 clients, 0.1 s apart.
SCALE = 2100
WRITING = argparse.Namespace(clients=20, delay=0.1, seconds=6.0, event_at=2.0, scale=SCALE)


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
    record = measured(target, event, load=WRITING)
    assert record["writes_acknowledged"] > 10 and record["writes_lost"] == 0, record
    assert record["writes_found"] >= record["writes_acknowledged"], record
    assert record["writes_unacknowledged"] <= WRITING.clients, record
    assert record["answered"] > 100, record  # reads and writes were served around the event
    # Only the container killed outright stays down.
    assert record["serves_after"] == (event != "kill-container"), record
