"""The bounds on more cores (bench/models/scaling.py): which limit binds, and how each moves with the cores."""

from __future__ import annotations

from bench.models.scaling import Demand, bound, bounds, share_of_bound


def demand(**changes: object) -> Demand:
    base: dict[str, object] = {"target": "t", "clients": 1000, "wait_s": 1.0, "cpu_ms": 2.0, "processes": 1,
                               "held_per_process": 1000, "per_core": False, "measured_rps": 400.0}  # fmt: skip
    return Demand(**(base | changes))  # type: ignore[arg-type]


def test_a_thread_pool_s_cap_is_its_size_on_any_machine() -> None:
    threads = demand(processes=4, held_per_process=50)
    found = bounds(threads)
    assert {b.limit for b in found.values()} == {"held at once"}
    assert {b.rps for b in found.values()} == {round(200 / 1.002, 1)}


def test_one_gevent_process_stops_at_one_core_and_one_per_core_grows_with_them() -> None:
    one = demand()
    assert bound(one, 2) == bound(one, 32) == bound(one, 2).__class__(500.0, "CPU")
    per_core = demand(per_core=True, cpu_ms=4.0)
    assert bound(per_core, 2).rps == 500.0 and bound(per_core, 2).limit == "CPU"
    # With the cores, the CPU bound passes the clients' own: 1000 clients can send at most 1000 / 1.004 a second.
    assert bound(per_core, 8) == bound(per_core, 8).__class__(round(1000 / 1.004, 1), "clients")


def test_processes_beyond_the_cores_buy_nothing() -> None:
    assert bound(demand(processes=8, cpu_ms=4.0), 2).rps == bound(demand(processes=2, cpu_ms=4.0), 2).rps == 500.0


def test_asyncio_holds_without_a_bound_but_memory() -> None:
    assert bound(demand(held_per_process=None, cpu_ms=0.5), 32).limit == "clients"


def test_the_measurement_s_share_of_its_bound() -> None:
    assert share_of_bound(demand(measured_rps=250.0), 2) == 0.5


def test_threads_shared_out_per_core_keep_their_total() -> None:
    """2 x 100 threads, one process per core sharing the tutorial's 200: on 16 cores still 200 at once, where 16
    processes of 100 threads each would hold 1600."""
    shared = demand(processes=2, held_per_process=100, per_core=True, held_shared=True, clients=5000)
    grown = demand(processes=2, held_per_process=100, per_core=True, clients=5000)
    assert bound(shared, 16) == bound(shared, 16).__class__(round(200 / 1.002, 1), "held at once")
    assert bound(grown, 16).rps == round(1600 / 1.002, 1)
