"""What every closed-loop tool's report shares: latency percentiles, the 50th and 99th at least."""

from __future__ import annotations

import math


def nearest_rank(ordered: list[float], share: float) -> float:
    """The value at `share` (0 to 1) of a sorted list, by the nearest-rank method: never an interpolated value."""
    return ordered[max(0, math.ceil(share * len(ordered)) - 1)]


def rounded_rank(ordered: list[float], share: float) -> float | None:
    """nearest_rank in ms to 0.1; None where it falls on a failure (ranked as infinitely slow) or there is none."""
    value = nearest_rank(ordered, share) if ordered else math.inf
    return None if math.isinf(value) else round(value, 1)


class Percentiles:
    percentiles_ms: dict[int, float]

    @property
    def p50_ms(self) -> float:
        return self.percentiles_ms[50]

    @property
    def p99_ms(self) -> float:
        return self.percentiles_ms[99]
