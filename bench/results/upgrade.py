"""Result sets written before format 2 (version 1: no "format" key), in today's vocabulary. The committed sets span
every version of the harness, and each mapping here says which sets wrote what the old way, so that nothing past the
loader knows how an older harness named things: a renderer reads one name for one thing.

Version 2 changed, against every set before it:
- make bookstore's `app_threads_peak` and `app_rss_mb_peak` are `threads_peak` and `rss_mb_peak`, as make bench's;
- the CPU probe is one `cpu_probe` object (records.CpuProbe) where make bench kept four keys per role
  (`cpu_probe_before`, `cpu_probe_after`, `cpu_probe_moved`, `steady`) and make bookstore five on the host
  (`cpu_probe_s_before`, `cpu_probe_s_after_wrk`, `pgbench_cpu_probe_s_before`, `cpu_probe_s_after`, its one
  `cpu_probe_moved`, and `steady` from the sets that judged it)."""

from __future__ import annotations

from typing import Any

from bench.results.records import CpuProbe

# make bookstore's names for the app server's figures, and make bench's for the same.
BOOKSTORE_RENAMED = {"app_threads_peak": "threads_peak", "app_rss_mb_peak": "rss_mb_peak"}
# make bookstore's host probes, in the order they ran: around wrk, then around pgbench.
BOOKSTORE_PROBES = {
    "before": "cpu_probe_s_before",
    "after_wrk": "cpu_probe_s_after_wrk",
    "pgbench_before": "pgbench_cpu_probe_s_before",
    "after": "cpu_probe_s_after",
}
BENCH_PROBE_KEYS = ("cpu_probe_before", "cpu_probe_after", "cpu_probe_moved", "steady")


def metadata(raw: dict[str, Any]) -> dict[str, Any]:
    upgraded = dict(raw)
    if not upgraded.get("mode"):
        # Sets from before "mode" said "sweep": true or false.
        upgraded["mode"] = "sweep" if upgraded.pop("sweep", False) else "bench"
    return upgraded


def record(raw: dict[str, Any], mode: str) -> dict[str, Any]:
    if mode == "bookstore":
        return bookstore_record(raw)
    if mode in ("latency", "slowclients", "labs", "incidents"):
        return dict(raw)  # their records have kept their names
    # make bench's records, and those of its kinds (sweep, overload) and of the map, which it measures.
    return bench_record(raw)


def bench_record(raw: dict[str, Any]) -> dict[str, Any]:
    upgraded = {key: value for key, value in raw.items() if key not in BENCH_PROBE_KEYS}
    upgraded.setdefault("loadgen", "ab")  # sets from before LOADGEN=: ab was the only load generator
    upgraded.setdefault("cpu_units", 0)  # sets from before ?cpu=: no CPU work
    if any(key in raw for key in BENCH_PROBE_KEYS):
        before, after = raw.get("cpu_probe_before") or {}, raw.get("cpu_probe_after") or {}
        seconds = {
            role: {moment: times[role] for moment, times in (("before", before), ("after", after)) if role in times}
            for role in dict.fromkeys([*before, *after])
        }
        probe = CpuProbe(seconds, raw.get("cpu_probe_moved") or {}, raw.get("steady"))
        upgraded["cpu_probe"] = probe.to_json()
    return upgraded


def bookstore_record(raw: dict[str, Any]) -> dict[str, Any]:
    probe_keys = {*BOOKSTORE_PROBES.values(), "cpu_probe_moved", "steady"}
    upgraded = {BOOKSTORE_RENAMED.get(key, key): value for key, value in raw.items() if key not in probe_keys}
    if any(key in raw for key in probe_keys):
        host = {moment: raw[key] for moment, key in BOOKSTORE_PROBES.items() if key in raw}
        moved = raw.get("cpu_probe_moved")
        probe = CpuProbe({"host": host}, {} if moved is None else {"host": moved}, raw.get("steady"))
        upgraded["cpu_probe"] = probe.to_json()
    return upgraded
