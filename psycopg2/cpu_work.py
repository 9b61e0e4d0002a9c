"""`?cpu=<units>`: work done in Python while holding the GIL, the same in every app.

One unit builds and renders a 2,400-row HTML table in pure Python: about 1 ms of CPU on the machine this
was written on (CPython 3.13, 2026-11-23); the harness measures it again in each image it loads and keeps the
figure with every result (`cpu_ms_per_unit`). Each app folder has its own copy of this file, since each is its
own build context; tests/test_apps.py checks that the copies are identical.
"""

import sys
import time

MAX_UNITS = 1000
ROWS = 2400


def units_requested(raw: str) -> int:
    """The number of units in `raw`, or ValueError with the one line a 400 answer says."""
    if not raw.isascii() or not raw.isdigit() or int(raw) > MAX_UNITS:
        raise ValueError(f"cpu must be a whole number of work units between 0 and {MAX_UNITS}, got {raw[:40]!r}")
    return int(raw)


def render(units: int) -> int:
    """Do `units` units of work; the length of what was rendered, so that nothing can skip it."""
    size = 0
    for unit in range(units):
        rows = [{"id": i, "name": f"item {unit}-{i}", "price": i * 1.25} for i in range(ROWS)]
        size += len("".join(f"<tr><td>{r['id']}</td><td>{r['name']}</td><td>{r['price']:.2f}</td></tr>" for r in rows))
    return size


def ms_per_unit(units: int = 200) -> float:
    """CPU milliseconds one unit takes in this interpreter, on this machine, now."""
    started = time.process_time()
    render(units)
    return (time.process_time() - started) * 1000 / units


if __name__ == "__main__":  # what the harness runs in a target's container: `python cpu_work.py`
    print(f"{ms_per_unit(int(sys.argv[1]) if len(sys.argv) > 1 else 200):.3f}")
