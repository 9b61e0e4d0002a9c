"""A `make recommend` set rendered from OUT/results.json alone: each way's share of slow_api alone at each load, what
one process per core changes against one, what one process does on one core with its CPU per request, and the
bounds on machines of more cores (bench/models/scaling.py) beside how close this machine came to its own; every
measurement last. results.md is the page (index.html shows it)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from bench.bench_run.record import BenchResult
from bench.bench_run.render import per_request
from bench.bench_run.rows import Row, counted, summarise
from bench.containers.scenarios import REFERENCE
from bench.loadgen.closed_loop import LOADGENS
from bench.models.scaling import CORES, Demand, bound
from bench.render import html_page, shared
from bench.results.store import LoadedSet

EVERY_CORE, ONE_CORE = "every core", "one core"
Load = tuple[int, int]  # clients, CPU units


@dataclass(frozen=True)
class Way:
    """A row of the page: one configuration of a way under one placement, at one load, its repeats summarised."""

    label: str
    placement: str
    per_core: bool
    row: Row

    @property
    def record(self) -> BenchResult:
        return self.row.record

    @property
    def load(self) -> Load:
        return self.record.c, self.record.cpu_units


def placement_of(record: BenchResult) -> str:
    return record.placement or EVERY_CORE


def ways(records: list[BenchResult]) -> list[Way]:
    """One per configuration, placement and load, in the order the run measured them."""
    groups: dict[tuple[str, str, int, int], list[BenchResult]] = {}
    for record in counted(records):
        key = (record.label or record.target, placement_of(record), record.c, record.cpu_units)
        groups.setdefault(key, []).append(record)
    return [
        Way(label, placement, bool(runs[0].per_core), summarise(runs)[0])
        for (label, placement, _, _), runs in groups.items()
    ]


def load_name(load: Load) -> str:
    clients, cpu = load
    return f"{clients} clients" + (f", ?cpu={cpu}" if cpu else "")


def share(way: Way | None) -> str:
    """The median share of slow_api alone, the range of requests per second beside it; FAILED with the reason."""
    if way is None:
        return "–"
    if not way.row.ok:
        return f"FAILED: {way.record.problem}"
    spread = way.row.spread
    runs = f" ({spread.low:.0f} to {spread.high:.0f}/s)" if spread and way.row.runs > 1 else ""
    value = way.row.vs_reference
    return (f"{value:.2f}" if value is not None else "–") + runs


def cpu_ms_of(record: BenchResult) -> float | None:
    """The app's CPU per request; none over fewer than 100 requests, where ticks of 10 ms make it meaningless."""
    return per_request(record.cpu_seconds, record) if record.n >= 100 else None


def cpu_ms(way: Way) -> float | None:
    return cpu_ms_of(way.record)


def served(way: Way) -> bool:
    """A way of serving the app, not slow_api alone."""
    return way.record.scenario != REFERENCE


def shares_table(found: list[Way], placement: str) -> list[str]:
    """Per configuration, its share of slow_api alone at each load (the median of the repeats)."""
    chosen = [way for way in found if way.placement == placement]
    loads = sorted({way.load for way in chosen}, key=lambda load: (load[1], load[0]))
    by_key = {(way.label, way.load): way for way in chosen}
    labels = list(dict.fromkeys(way.label for way in chosen))
    header = ["way", "holds at once", *(load_name(load) for load in loads)]
    rows = [
        [label, shared.at_once(by_key[next((label, ld) for ld in loads if (label, ld) in by_key)].record)]
        + [share(by_key.get((label, load))) for load in loads]
        for label in labels
    ]
    return [shared.markdown_table(header, rows)]


def per_core_table(found: list[Way]) -> list[str]:
    """Each way's one-per-core configuration against its one-process one, load by load: the ratio of the medians,
    and whether their ranges overlap (then this run does not tell them apart)."""
    every = [way for way in found if way.placement == EVERY_CORE and way.row.ok and way.row.spread]
    rows = []
    for many in (way for way in every if way.per_core):
        base = many.record.target
        one = next((w for w in every if w.record.target == base and not w.per_core and w.load == many.load), None)
        if one is None or one.row.spread is None or many.row.spread is None:
            continue
        ratio = many.row.spread.median / one.row.spread.median
        overlap = one.row.spread.low <= many.row.spread.high and many.row.spread.low <= one.row.spread.high
        rows.append([
            base, load_name(many.load), f"{one.label}: {one.row.spread.median:.1f}",
            f"{many.label}: {many.row.spread.median:.1f}", f"x{ratio:.2f}",
            ("yes" if overlap else "no") if min(one.row.runs, many.row.runs) > 1 else "– (one run)",
        ])  # fmt: skip
    header = ["way", "load", "one process, requests/s", "one per core, requests/s", "per core / one", "ranges overlap"]
    return [shared.markdown_table(header, rows)]


def one_core_table(found: list[Way]) -> list[str]:
    """On one core of its own: what each way did, its CPU per request, and the CPU's bound, 1 / (CPU per request)."""
    rows = []
    for way in (w for w in found if w.placement == ONE_CORE and served(w) and w.row.ok and w.row.spread):
        spent = cpu_ms(way)
        ceiling = 1000 / spent if spent else None
        rps = way.row.spread.median if way.row.spread else 0.0
        rows.append([
            way.label, load_name(way.load), f"{rps:.1f}", f"{spent:.2f}" if spent else "–",
            f"{ceiling:.0f}" if ceiling else "–", f"{rps / ceiling:.2f}" if ceiling else "–",
        ])  # fmt: skip
    header = ["way", "load", "requests/s", "app CPU ms / request", "CPU bound on one core, /s", "share of it"]
    return [shared.markdown_table(header, rows)]


def demand_of(way: Way) -> Demand | None:
    record, spent = way.record, cpu_ms(way)
    if not way.row.ok or spent is None or way.row.spread is None:
        return None
    return Demand(
        target=way.label, clients=record.c, wait_s=record.delay, cpu_ms=spent, processes=record.workers,
        held_per_process=record.per_worker(), per_core=way.per_core, measured_rps=way.row.spread.median,
        held_shared=way.per_core and record.mode == "sync",
        clients_ceiling_rps=LOADGENS[record.loadgen].ceiling_rps(record.n, record.c, record.delay + spent / 1000, None),
    )  # fmt: skip


def machine_bound(way: Way, demand: Demand, cores: int) -> float:
    """The bound on this machine with every process on a request's path counted: here the load generator, slow_api,
    Nginx and Docker's proxy share the cores with the app, which a bigger machine's server would not."""
    others = per_request(sum((way.record.cpu_seconds_others or {}).values()), way.record) or 0.0
    everything = cores / ((demand.cpu_ms + others) / 1000)
    return min(bound(demand, cores).rps, everything)


def bounds_table(found: list[Way], cores: int) -> list[str]:
    """Per configuration and load, measured on every core: its inputs, the bound on each machine size and what
    binds there, and this machine's measurement as a share of its own bound."""
    header = ["way", "load", "CPU ms / request", "holds at once", *(f"{n} cores" for n in CORES), "here / bound"]
    rows = []
    for way in (w for w in found if w.placement == EVERY_CORE and served(w)):
        demand = demand_of(way)
        if demand is None:
            continue
        here = machine_bound(way, demand, cores)
        rows.append([
            way.label, load_name(way.load), f"{demand.cpu_ms:.2f}", shared.at_once(way.record),
            *(f"{b.rps:.0f} ({b.limit})" for b in (bound(demand, n) for n in CORES)),
            f"{demand.measured_rps / bound(demand, cores).rps:.2f} (all on the path counted: "
            f"{demand.measured_rps / here:.2f})",
        ])  # fmt: skip
    return [shared.markdown_table(header, rows)]


def every_measurement(records: Iterable[BenchResult]) -> list[str]:
    header = ["way", "placement", "load", "repeat", "requests/s", "of slow_api alone", "P50 ms", "P99 ms",
              "failed", "peak RSS MB", "app CPU ms / request", "CPU steady"]  # fmt: skip
    rows = [
        [
            r.label or r.target, placement_of(r), load_name((r.c, r.cpu_units)), str(r.repeat),
            shared.rps(r.rps) if r.rps is not None else f"FAILED: {r.problem}",
            f"{r.vs_reference:.3f}" if r.vs_reference is not None else "–",
            f"{r.p50_ms:.0f}" if r.p50_ms is not None else "–", f"{r.p99_ms:.0f}" if r.p99_ms is not None else "–",
            str(r.failed or 0), f"{r.rss_mb_peak:.0f}" if r.rss_mb_peak else "–",
            f"{ms:.2f}" if (ms := cpu_ms_of(r)) is not None else "–",
            shared.steady_cell(shared.steadiness([r.cpu_probe])),
        ]
        for r in records
    ]  # fmt: skip
    return [shared.markdown_table(header, rows)]


def render(out: Path, loaded: LoadedSet) -> None:
    metadata, records = loaded.metadata, loaded.records_of(BenchResult)
    found = ways(records)
    cores = metadata.cpu_count or 1
    failed = [f"{way.label} ({way.placement}, {load_name(way.load)})" for way in found if not way.row.ok]
    repeats = len({r.repeat for r in records})
    unit_ms = [r.cpu_ms_per_unit for r in records if r.cpu_ms_per_unit]
    lines = [
        *shared.head(
            "The recommendation's run: one process or one per core, and what more cores would do",
            metadata,
            f" Took {metadata.minutes} min.",
        ),
        "",
        (
            f"Each figure is the median of {repeats} runs, interleaved round the whole matrix,"
            if repeats > 1
            else "Each figure is of one run,"
        )
        + " as a share of slow_api alone under the same load, placement and repeat. A CPU unit measured "
        + (f"{min(unit_ms):.2f} to {max(unit_ms):.2f} ms" if unit_ms else "nothing (no CPU load ran)")
        + " in the images.",
        "",
        ("**Not OK:** " + "; ".join(failed)) if failed else "Every way verified, no failed or non-2xx request.",
        "",
        f"## Share of slow_api alone, the app on every core ({cores}) beside the load generator and slow_api",
        "",
        *shares_table(found, EVERY_CORE),
        "",
        "## One process per core against one",
        "",
        *per_core_table(found),
        "",
        "## One core of its own: what one process did there",
        "",
        *shares_table(found, ONE_CORE),
        "",
        *one_core_table(found),
        "",
        "## Bounds on more cores, from a model",
        "",
        "The asymptotic bounds of operational analysis (Denning and Buzen 1978; Lazowska et al. 1984, chapter 5):"
        " the least of clients / (delay + CPU), held at once / (delay + CPU) and min(processes, cores) / CPU, from"
        " each way's own CPU per request measured here; a way run one per core gets a process per core. Bounds,"
        " not predictions: they leave out locks, the kernel's network stack and the CPU per request that grows"
        " with contention. Here the load generator, slow_api, Nginx and Docker's proxy share the cores: the last"
        " column gives the measurement's share of the bound, and of the bound with their CPU counted too.",
        "",
        *bounds_table(found, cores),
        "",
        "## Every measurement",
        "",
        *every_measurement(counted(records)),
        "",
        *shared.packages(metadata),
    ]
    (out / "results.md").write_text("\n".join(lines) + "\n")
    html_page.from_markdown(out, metadata, loaded.mode)
