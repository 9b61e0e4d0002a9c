"""What a way of serving could do on a machine with more cores, bounded from what it was measured to need here.

The asymptotic bounds of operational analysis (Denning and Buzen, "The Operational Analysis of Queueing Network
Models", Computing Surveys 10(3), 1978; Lazowska, Zahorjan, Graham and Sevcik, "Quantitative System Performance",
1984, chapter 5): a closed system of C clients, each request needing D seconds of CPU and waiting W seconds on
something that is not this machine's CPU (slow_api's delay), can answer at most

    X <= C / (W + D)                      each client has one request out at a time, and it takes W + D at least
    X <= H / (W + D)                      the server holds at most H requests at once (processes x threads, or
                                          greenlets), each for W + D at least
    X <= min(P, N) / D                    the CPU: N cores, of which a Python process uses one at a time (the GIL),
                                          so P processes use at most min(P, N)

requests per second; the least of the three is the bound, and its name says what limits the way there. The inputs are
measured (D: the server's processes' CPU seconds over the requests they answered, at that load, on this machine), the
bounds are a model's: they leave out what more cores do not remove (a lock, the kernel's network stack, the other
processes a machine runs) and what they add (a CPU per request that grows with contention). A way whose processes grow
with the cores (one per core) gets P = N."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

CORES = (2, 4, 8, 16, 32)


@dataclass(frozen=True)
class Demand:
    """One way at one load, as measured: what the bounds are computed from."""

    target: str
    clients: int
    wait_s: float  # the time a request waits on something other than this machine's CPU
    cpu_ms: float  # the server's processes' CPU per request
    processes: int
    held_per_process: int | None  # requests one process holds at once; None: no bound but memory (asyncio)
    per_core: bool  # its processes grow with the cores: one per core
    measured_rps: float
    # Its processes share out a fixed number of threads (the tutorial's 200), so the total held stays as measured
    # however many processes there are.
    held_shared: bool = False
    # What its load generator allows the clients, by the ceiling model of the run's command (bench/loadgen/), each
    # request taking the wait and the CPU: at most clients / (wait + CPU), less where the tool has its own rounds.
    # None: clients / (wait + CPU) alone.
    clients_ceiling_rps: float | None = None

    @property
    def each_s(self) -> float:
        """A request's time, from the client's side: its wait and its CPU."""
        return self.wait_s + self.cpu_ms / 1000

    @property
    def clients_alone_rps(self) -> float:
        """What the clients allow without their load generator's rounds: clients / (wait + CPU)."""
        return self.clients / self.each_s

    def processes_on(self, cores: int) -> int:
        return cores if self.per_core else self.processes

    def held_on(self, cores: int) -> float:
        per_process = self.held_per_process
        if per_process is None:
            return float("inf")
        return per_process * (self.processes if self.held_shared else self.processes_on(cores))


@dataclass(frozen=True)
class Bound:
    rps: float
    limit: str  # which bound is the least: "clients", "held at once" or "CPU"


def bound(demand: Demand, cores: int) -> Bound:
    """The least of the three bounds on `cores` cores."""
    cpu_s = demand.cpu_ms / 1000
    clients = demand.clients_ceiling_rps
    candidates = {
        "clients": demand.clients_alone_rps if clients is None else clients,
        "held at once": demand.held_on(cores) / demand.each_s,
        "CPU": min(demand.processes_on(cores), cores) / cpu_s if cpu_s > 0 else float("inf"),
    }
    limit = min(candidates, key=lambda name: candidates[name])
    return Bound(round(candidates[limit], 1), limit)


def bounds(demand: Demand, cores: Iterable[int] = CORES) -> dict[int, Bound]:
    return {count: bound(demand, count) for count in cores}


def share_of_bound(demand: Demand, cores: int) -> float:
    """How close the measurement came to its own bound on the machine it ran on."""
    return round(demand.measured_rps / bound(demand, cores).rps, 3)
