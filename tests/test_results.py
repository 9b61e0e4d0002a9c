"""bench/results, the result set's file: new sets are written in today's format, older ones read in today's
vocabulary (bench/results/upgrade.py), a set from a newer harness is refused, and every committed set loads. No
Docker."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench import sets
from bench.bench_run.measure import checked, unmeasured_record
from bench.bench_run.record import BenchResult, Measurement, RunFacts
from bench.containers import roles
from bench.containers.scenarios import ROOT, load_targets
from bench.measure import host_probe
from bench.measure.client import Client, Load
from bench.modes.incidents.record import IncidentResult
from bench.modes.labs.record import LabResult
from bench.modes.latency.record import LatencyResult
from bench.modes.slowclients.record import SlowClientResult
from bench.modes.yourapp.record import YourAppResult
from bench.results import store
from bench.results.records import CpuProbe
from bench.sets import render

RESULTS = Path(__file__).parent.parent / "results"
COMMITTED = sorted(path.parent.name for path in RESULTS.glob("*/results.json"))
METADATA = {
    "command": "python -m bench.modes.bench", "date": "2026-11-25T10:00:00+00:00", "git_commit": "abc1234",
    "cpu_count": 2, "kernel": "6.1", "docker_version": "20.10.24", "compose_version": "2.26.1", "packages": {},
}  # fmt: skip


def write_v1(folder: Path, metadata: dict, records: list[dict]) -> Path:
    (folder / store.FILE).write_text(json.dumps({"metadata": metadata, "results": records}))
    return folder


def test_a_new_set_says_its_format_and_reads_back_as_written(tmp_path: Path) -> None:
    metadata, records = {"mode": "latency", "command": "x"}, [{"target": "a", "p50_ms": 1.0}]
    store.write(tmp_path, metadata, records)
    document = json.loads((tmp_path / store.FILE).read_text())
    assert document["format"] == store.FORMAT == 2 and list(document) == ["format", "metadata", "results"]
    assert store.read_json(tmp_path) == (metadata, records)


def test_a_set_from_a_newer_harness_or_not_a_set_is_refused(tmp_path: Path) -> None:
    (tmp_path / store.FILE).write_text(json.dumps({"format": store.FORMAT + 1, "metadata": {}, "results": []}))
    with pytest.raises(store.FormatError, match="update it"):
        store.read_json(tmp_path)
    (tmp_path / store.FILE).write_text(json.dumps({"results": []}))
    with pytest.raises(store.FormatError, match="not a result set"):
        store.read_json(tmp_path)


def test_bookstore_v1_reads_in_make_bench_s_names_with_one_probe(tmp_path: Path) -> None:
    old = {
        "target": "t", "app_threads_peak": 19, "app_rss_mb_peak": 165.1, "cpu_probe_s_before": 0.1,
        "cpu_probe_s_after_wrk": 0.11, "pgbench_cpu_probe_s_before": 0.12, "cpu_probe_s_after": 0.13,
        "cpu_probe_moved": 1.3, "steady": False,
    }  # fmt: skip
    unjudged = {"target": "u", "cpu_probe_s_before": 0.2, "cpu_probe_s_after": 0.21}  # sets from before `steady`
    _, (record, early) = store.read_json(write_v1(tmp_path, {"mode": "bookstore"}, [old, unjudged]))
    assert record == {
        "target": "t", "threads_peak": 19, "rss_mb_peak": 165.1,
        "cpu_probe": {
            "seconds": {"host": {"before": 0.1, "after_wrk": 0.11, "pgbench_before": 0.12, "after": 0.13}},
            "moved": {"host": 1.3}, "steady": False,
        },
    }  # fmt: skip
    assert early["cpu_probe"] == {"seconds": {"host": {"before": 0.2, "after": 0.21}}, "moved": {}, "steady": None}


def test_bench_v1_reads_with_its_probe_per_role_its_tool_and_its_mode(tmp_path: Path) -> None:
    probed = {
        "target": "t", "loadgen": "wrk", "cpu_units": 10, "cpu_probe_before": {"server": 0.1, "client": 0.1},
        "cpu_probe_after": {"server": 0.2, "client": 0.1}, "cpu_probe_moved": {"server": 2.0, "client": 1.0},
        "steady": False,
    }  # fmt: skip
    metadata, (record, older) = store.read_json(write_v1(tmp_path, {"sweep": True}, [probed, {"target": "o"}]))
    assert metadata == {"mode": "sweep"}  # sets from before "mode" said "sweep": true
    assert record == {
        "target": "t", "loadgen": "wrk", "cpu_units": 10,
        "cpu_probe": {
            "seconds": {"server": {"before": 0.1, "after": 0.2}, "client": {"before": 0.1, "after": 0.1}},
            "moved": {"server": 2.0, "client": 1.0}, "steady": False,
        },
    }  # fmt: skip
    assert older == {"target": "o", "loadgen": "ab", "cpu_units": 0}  # before LOADGEN= and ?cpu=


@pytest.mark.parametrize("result_set", COMMITTED)
def test_every_committed_set_reads_in_today_s_vocabulary(result_set: str) -> None:
    metadata, records = store.read_json(RESULTS / result_set)
    old_names = {"app_threads_peak", "app_rss_mb_peak", "steady", "cpu_probe_moved", "cpu_probe_s_before"}
    assert metadata["mode"] and not [record for record in records if old_names & record.keys()]


@pytest.mark.parametrize("result_set", COMMITTED)
def test_every_committed_set_loads_typed_with_every_key_named(result_set: str) -> None:
    """Each record as its mode's kind, and no key left untyped but a lab's own figures (bench/modes/labs/record.py)."""
    loaded = store.load(RESULTS / result_set)
    records = loaded.records_of(sets.KINDS[loaded.mode].record)
    assert records and len(records) == len(loaded.raw)
    assert loaded.mode == "labs" or not [record.extra for record in records if record.extra]


def test_a_record_its_mode_cannot_read_says_which(tmp_path: Path) -> None:
    write_v1(tmp_path, {"mode": "latency", **METADATA}, [{"target": "a"}])
    with pytest.raises(store.FormatError, match="record 0 is no LatencyResult"):
        store.load(tmp_path).records_of(LatencyResult)
    write_v1(tmp_path, {"mode": "latency"}, [])
    with pytest.raises(store.FormatError, match="its metadata lacks"):
        store.load(tmp_path)


def test_what_make_bench_writes_today_loads_as_written(tmp_path: Path) -> None:
    """A record as bench/bench_run/measure.py writes it, with its CPU probe as bench/containers/roles.py takes it."""
    target = load_targets("sync-gunicorn")[0]
    record = unmeasured_record(target, Load(n=10, c=5, delay=1.0), Client("host"), RunFacts())
    measurement = Measurement(
        command="ab -n 10 -c 5 ...", threads_peak=12, rss_mb_peak=50.0, cpu_seconds=0.1, sampled_on="this machine",
        rps=3.2, p99_ms=1010.0,
    )  # fmt: skip
    probe = roles.steadiness({"server": 0.1, "client": 0.1}, {"server": 0.2, "client": 0.1})
    record = checked(record, None, measurement, probe)
    store.write(tmp_path, {"mode": "bench", **METADATA}, [record.to_json()])
    (loaded,) = store.load(tmp_path).records_of(BenchResult)
    assert loaded == record
    assert (loaded.target, loaded.rps, loaded.threads_peak, loaded.ok) == (target.name, 3.2, 12, True)
    assert loaded.cpu_probe == CpuProbe(
        {"server": {"before": 0.1, "after": 0.2}, "client": {"before": 0.1, "after": 0.1}},
        {"server": 2.0, "client": 1.0}, steady=False,
    )  # fmt: skip
    assert not loaded.extra


def test_make_bookstore_writes_its_four_host_probes_as_one() -> None:
    measured = dict.fromkeys(host_probe.MOMENTS, 0.1) | {"after": 0.13}
    probe = host_probe.cpu_probe_of(measured, judged=True)
    assert probe is not None and probe.to_json() == {
        "seconds": {"host": {"before": 0.1, "after_wrk": 0.1, "pgbench_before": 0.1, "after": 0.13}},
        "moved": {"host": 1.3}, "steady": False,
    }  # fmt: skip
    stopped = host_probe.cpu_probe_of({"before": 0.1}, judged=False)  # before the database alone
    assert stopped == CpuProbe({"host": {"before": 0.1}}, {}, None)
    assert host_probe.cpu_probe_of({}, judged=False) is None


@pytest.mark.parametrize("result_set", ["2026-11-25-repeat3", "2026-11-25-bookstore-ladder"])
def test_a_committed_set_written_again_in_today_s_format_renders_the_same(tmp_path: Path, result_set: str) -> None:
    """Both probes' shapes, both vocabularies: read from version 1, written as version 2, the same pages."""
    folder = tmp_path / result_set  # the page names its set by its folder
    folder.mkdir()
    store.write(folder, *store.read_json(RESULTS / result_set))
    assert store.load(folder).version == store.FORMAT
    render(folder)
    for name in ("results.md", "index.html"):
        assert (folder / name).read_text() == (RESULTS / result_set / name).read_text(), name


# The modes whose records are built typed as they are measured and written by their class (to_json).
Written = LatencyResult | SlowClientResult | IncidentResult | BenchResult | YourAppResult | LabResult
WRITTEN_BY_THEIR_CLASS: dict[str, type[Written]] = {
    "latency": LatencyResult,
    "slowclients": SlowClientResult,
    "incidents": IncidentResult,
    "bench": BenchResult,
    "recommend": BenchResult,
    "yourapp": YourAppResult,
    "labs": LabResult,
}
# Older sets of these modes were written in an older format (make bench's probe per role, its old names): what the
# store reads them as is checked above; written back, they come out in today's.
TODAY_S_FORMAT_ONLY = {"bench", "recommend"}


def committed_sets(mode: str) -> list[Path]:
    """Every committed set the store reads as that mode's, whatever format wrote it (today's only, for the modes of
    TODAY_S_FORMAT_ONLY)."""
    folders = sorted(path.parent for path in (ROOT / "results").glob(f"*/{store.FILE}"))
    return [
        folder
        for folder in folders
        if store.read_json(folder)[0]["mode"] == mode
        and (mode not in TODAY_S_FORMAT_ONLY or store.load(folder).version == store.FORMAT)
    ]


@pytest.mark.parametrize(
    ("folder", "kind"),
    [(folder, kind) for mode, kind in WRITTEN_BY_THEIR_CLASS.items() for folder in committed_sets(mode)],
    ids=lambda value: value.name if isinstance(value, Path) else value.__name__,
)
def test_a_committed_set_reads_into_its_record_type_and_writes_back_byte_for_byte(
    folder: Path, kind: type[Written]
) -> None:
    text = (folder / store.FILE).read_text()
    records = store.load(folder).records_of(kind)
    # The file's own metadata and format: the records alone come from the type.
    written = json.dumps(json.loads(text) | {"results": [record.to_json() for record in records]}, indent=2) + "\n"
    assert written == text


def test_the_committed_sets_of_those_modes_are_found() -> None:
    assert {mode: [folder.name for folder in committed_sets(mode)] for mode in WRITTEN_BY_THEIR_CLASS} == {
        "latency": ["2026-11-23-latency"],
        "slowclients": ["2026-11-23-slowclients", "2026-11-24-slowclients-new-ways"],
        "incidents": [
            "2026-11-25-incidents",
            "2026-11-25-incidents-bookstore",
            "2026-11-25-incidents-hog",
            "2026-11-25-incidents-nginx-uwsgi",
            "2026-11-25-incidents-settings",
        ],
        "bench": ["2026-11-27-mod-wsgi"],
        "recommend": ["2026-11-27-recommend"],
        "yourapp": ["2026-11-26-yourapp-flaskr", "2026-11-28-yourapp-flaskr", "2026-11-28-yourapp-ihatemoney"],
        "labs": ["2026-11-23-labs"],
    }
