"""What every closed-loop tool's report shares: latency percentiles, the 50th and 99th at least."""

from __future__ import annotations


class Percentiles:
    percentiles_ms: dict[int, float]

    @property
    def p50_ms(self) -> float:
        return self.percentiles_ms[50]

    @property
    def p99_ms(self) -> float:
        return self.percentiles_ms[99]
