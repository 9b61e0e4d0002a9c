"""hey's, wrk's, h2load's and vegeta's reports as they really print them, and their ceilings' arithmetic.

The files in loadgen_outputs/ are real outputs captured here (hey 0.1.4, wrk 4.1.0, vegeta v12.13.0), against
slow_api on a free port, or a small http.server (HTTP/1.1, keep-alive, 0.1 s per request) that answers every
fourth request with 500, resets its connection, or takes 1.6 s:
- hey-clean.txt `hey -n 200 -c 50` against slow_api at delay 0.2; hey-few.txt `-n 40 -c 10`, under 100 answers;
  hey-non2xx.txt, hey-reset.txt `-n 40 -c 4` against the 500 and the reset server; hey-some-timeouts.txt
  `-n 40 -c 4 -t 1` against the slow one; hey-timeout.txt `-n 20 -c 10 -t 1` against slow_api at delay 2;
  hey-refused.txt against a closed port; hey-killed.txt `-n 200 -c 10` whose slow_api was killed mid-run.
- wrk-*.txt the same cases with `wrk --latency --timeout 30s` (`--timeout 1s` for the timeouts), `-d 2s` or 3s.
- h2load-*.txt (nghttp2 1.52) `h2load -N 30 --log-file=/dev/stdout`, read through a pipe as the harness reads it,
  against gunicorn 27's gevent worker serving h2c (`--http2-cleartext both`) a small Flask app: clean `-n 200 -c 50`
  at delay 0.2; non2xx `-n 40 -c 4` at delay 0.1, every fourth answer a 500; timeout `-n 20 -c 10 -N 1` at delay 2;
  refused against a closed port.
- vegeta-*.jsonl `vegeta attack -rate 20/s` then `vegeta encode -to json`, and vegeta-*.report.json vegeta's own
  `report -type json` of the same results: clean (slow_api, delay 0.2, 2 s), non2xx, refused (1 s), timeout
  (`-timeout 1s` against the slow server) and overload: a single-threaded http.server, 0.1 s per request (at
  most 10 per second) offered 20 per second for 2 s.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from bench.loadgen import h2load, hey, wrk
from bench.loadgen.closed_loop import LOADGENS
from bench.loadgen.vegeta import attacked_by, parse_results

OUTPUTS = Path(__file__).parent / "loadgen_outputs"
BODY = "Hi there! slow api response"  # the http.server's; slow_api says "slow api response"


def text(name: str) -> str:
    return (OUTPUTS / name).read_text()


def test_hey_clean_run() -> None:
    result = hey.parse_hey(text("hey-clean.txt"))
    assert (result.complete, result.failed, result.non2xx) == (200, 0, 0)
    assert result.rps == 244.0943 and result.seconds == 0.8194
    assert result.p99_ms == 206.0 and 200 <= result.p50_ms <= result.p99_ms


def test_hey_below_100_answers_takes_the_slowest_as_p99() -> None:
    # hey's rank rule never reaches 99 % of 40 answers ("0% in 0.0000 secs"): the slowest is the P99.
    result = hey.parse_hey(text("hey-few.txt"))
    assert result.complete == 40 and result.p99_ms == 203.8 and 0 not in result.percentiles_ms


def test_hey_non_2xx_answers_are_not_failures() -> None:
    result = hey.parse_hey(text("hey-non2xx.txt"))
    assert (result.complete, result.failed, result.non2xx) == (40, 0, 10)


@pytest.mark.parametrize(
    ("name", "complete", "kinds"),
    [
        ("hey-reset.txt", 40, {"closed": 4}),
        ("hey-some-timeouts.txt", 40, {"timeout": 10}),
        ("hey-killed.txt", 200, {"connect": 120, "closed": 10}),
    ],
)
def test_hey_errors_by_kind(name: str, complete: int, kinds: dict[str, int]) -> None:
    result = hey.parse_hey(text(name))
    assert (result.complete, result.failure_kinds, result.failed) == (complete, kinds, sum(kinds.values()))


@pytest.mark.parametrize(
    ("name", "reason"),
    [("hey-refused.txt", r"not one answer in 20 requests \(connect 20\)"), ("hey-timeout.txt", "timeout 20")],
)
def test_hey_without_an_answer_is_an_error_that_says_why(name: str, reason: str) -> None:
    with pytest.raises(ValueError, match=reason):
        hey.parse_hey(text(name))


def test_wrk_clean_run() -> None:
    result = wrk.parse_wrk(text("wrk-clean.txt"))
    assert (result.complete, result.failed, result.non2xx) == (100, 0, 0)
    assert result.rps == 47.55 and result.seconds == 2.1
    assert result.percentiles_ms == {50: 201.7, 75: 202.4, 90: 216.1, 99: 216.4}


def test_wrk_non_2xx_and_socket_errors() -> None:
    non2xx = wrk.parse_wrk(text("wrk-non2xx.txt"))
    assert (non2xx.complete, non2xx.failed, non2xx.non2xx) == (54, 0, 14)
    reset = wrk.parse_wrk(text("wrk-reset.txt"))
    assert reset.failure_kinds == {"connect": 0, "read": 17, "write": 0, "timeout": 0} and reset.failed == 17
    late = wrk.parse_wrk(text("wrk-some-timeouts.txt"))
    assert (late.complete, late.failed_timeout) == (26, 4)  # a late answer is both a request and a timeout
    # A server gone mid-run: wrk reconnects at once, and counts every refused send.
    killed = wrk.parse_wrk(text("wrk-killed.txt"))
    assert (killed.complete, killed.failed_read, killed.failed_write) == (70, 10, 178541)


def test_wrk_without_an_answer_is_an_error_that_says_why() -> None:
    with pytest.raises(ValueError, match="unable to connect to 127.0.0.1:24199 Connection refused"):
        wrk.parse_wrk(text("wrk-refused.txt"))
    with pytest.raises(ValueError, match="not one answer within the timeout"):
        wrk.parse_wrk(text("wrk-timeout.txt"))  # wrk prints 0.00us for every percentile then


def test_ceilings_of_hey_and_wrk() -> None:
    assert hey.ceiling_rps(2000, 200, 1, None) == 200  # 10 full rounds, no solo first request
    assert hey.ceiling_rps(2000, 200, 1, 100) == 100  # the server, not hey, is the limit
    assert hey.ceiling_rps(10, 5, 1, 1) == 1
    assert hey.ceiling_rps(45, 10, 0.5, None) == 40 / (0.5 * 4)  # hey drops the 5 left over
    assert math.isinf(hey.ceiling_rps(10, 5, 0, None))
    assert wrk.duration_seconds(2000, 200, 1) == 10 and wrk.duration_seconds(10, 5, 0) == 1
    # The 10th round ends at 10 s and a few ms, after wrk stops: 9 rounds in 10 s.
    assert wrk.ceiling_rps(2000, 200, 1, None) == 180
    assert wrk.ceiling_rps(2000, 200, 1, 50) == 45
    # 4 rounds of 0.3 s fit in D = 2 s, and 6 do: the 7th, ending at 2.1 s, is cut off.
    assert wrk.ceiling_rps(40, 10, 0.3, None) == pytest.approx(10 * 6 / 2)
    assert wrk.wrk_command("http://x/", 2000, 200, 1)[1:8] == [
        "--threads",
        "2",
        "--connections",
        "200",
        "--duration",
        "10s",
        "--timeout",
    ]
    assert wrk.threads(5) == 1  # 5 / 2 would open 4 connections


def test_every_loadgen_has_the_same_interface() -> None:
    for name, loadgen in LOADGENS.items():
        assert loadgen.command("http://x/?delay=1", 20, 10, 1)[0] == name
        assert loadgen.ceiling_rps(20, 10, 1, None) > 0 and loadgen.ceiling_note
    assert [name for name, loadgen in LOADGENS.items() if loadgen.keepalive] == ["hey", "wrk", "h2load"]


def test_h2load_clean_run_over_http2() -> None:
    result = h2load.parse_h2load(text("h2load-clean.txt"))
    assert (result.protocol, result.complete, result.failed, result.non2xx) == ("h2c", 200, 0, 0)
    assert result.rps == 208.58 and result.seconds == pytest.approx(0.95887)
    # Percentiles from its per-request log: every request waited its 0.2 s delay, the 99th more than the 50th.
    assert 200 <= result.p50_ms <= result.p99_ms <= result.percentiles_ms[99] < 400, result.percentiles_ms


def test_h2load_non_2xx_answers_are_not_failures() -> None:
    # h2load's own "failed" is 10 here: it counts the 500s among its failures, which the harness does not.
    result = h2load.parse_h2load(text("h2load-non2xx.txt"))
    assert (result.complete, result.failed, result.non2xx, result.failure_kinds) == (40, 0, 10, {})


@pytest.mark.parametrize(("name", "reason"), [("h2load-refused.txt", "20 failed, 0 timed out"),
                                              ("h2load-timeout.txt", "20 failed, 10 timed out")])  # fmt: skip
def test_h2load_without_an_answer_is_an_error_that_says_why(name: str, reason: str) -> None:
    with pytest.raises(ValueError, match=reason):
        h2load.parse_h2load(text(name))


def test_h2load_ceiling() -> None:
    assert h2load.ceiling_rps(2000, 200, 1, None) == 200
    assert h2load.ceiling_rps(2000, 200, 1, 100) == 100
    assert h2load.ceiling_rps(45, 10, 0.5, None) == 45 / (0.5 * 5)  # the 5 left over make a fifth round
    assert math.isinf(h2load.ceiling_rps(10, 5, 0, None))
    assert h2load.h2load_command("http://x/", 20, 10)[:5] == ["h2load", "-n", "20", "-c", "10"]


def vegeta(name: str, body: str = BODY):
    return parse_results(text(f"vegeta-{name}.jsonl"), 20, body), json.loads(text(f"vegeta-{name}.report.json"))


def test_vegeta_clean_attack_agrees_with_its_own_report() -> None:
    result, report = vegeta("clean", "slow api response")
    assert result.requests == report["requests"] == 40 and result.status_codes == report["status_codes"]
    assert result.success_ratio == report["success"] == 1 and result.keeps_up
    # Sent on schedule, answered at the same pace; vegeta's "throughput" (18.6) divides by the wait too.
    assert result.sent_rps == pytest.approx(20, rel=0.01) and result.achieved_rps == pytest.approx(20, rel=0.01)
    assert report["throughput"] < 0.95 * 20
    # The same latencies, up to the send lag added here (7.4 ms at most in this capture), and vegeta's t-digest.
    assert result.send_lag_ms_max == 7.4
    for key, theirs in (("p50_ms", "50th"), ("p99_ms", "99th")):
        assert (
            report["latencies"][theirs] / 1e6 <= result.percentiles_ms[key] <= report["latencies"][theirs] / 1e6 + 7.5
        )
    assert 200 <= result.percentiles_ms["p50_ms"] <= result.percentiles_ms["p999_ms"] == result.max_ms


def test_vegeta_failures_are_never_a_flattering_latency() -> None:
    non2xx, report = vegeta("non2xx")
    assert non2xx.failure_kinds == {"status": 10} and non2xx.success_ratio == report["success"] == 0.75
    # 25 % failed: the P50 is an answer's, the P90 and above fall on failures.
    assert non2xx.percentiles_ms["p50_ms"] > 100 and non2xx.percentiles_ms["p90_ms"] is None
    refused, report = vegeta("refused")
    assert refused.failure_kinds == {"connect": 20} and refused.achieved_rps == 0
    assert set(refused.percentiles_ms.values()) == {None}  # vegeta's own report: P50 of 0.4 ms
    timeout, _ = vegeta("timeout")
    assert timeout.failure_kinds == {"timeout": 10} and not timeout.keeps_up


def test_vegeta_shows_a_server_that_cannot_keep_up() -> None:
    # At most 10 answers per second, 20 offered: vegeta kept sending 20, the answers came at a third of that,
    # each later than the last, and the ones stuck in the full listen backlog timed out after 30 s.
    result, _ = vegeta("overload")
    assert result.sent_rps == pytest.approx(20, rel=0.02) and result.achieved_rps < 10
    assert result.failure_kinds == {"timeout": 6} and not result.keeps_up
    assert result.percentiles_ms["p50_ms"] > 10 * 100  # ten times the 0.1 s the server takes per request


def test_vegeta_body_must_be_the_expected_one() -> None:
    result, _ = vegeta("clean", "another body")
    assert result.failure_kinds == {"body": 40} and result.success_ratio == 0


def test_a_vegeta_attack_that_fails_says_why() -> None:
    """What vegeta prints last on a failed attack (here a shell that fails as vegeta does on a bad target, so that
    the test runs where vegeta is only in its container) is the error's message."""
    failing = ["sh", "-c", "cat > /dev/null; echo 'bad URL: A TARGET' >&2; exit 1"]
    with pytest.raises(ValueError, match="vegeta attack failed: bad URL: A TARGET"):
        attacked_by(failing, "GET A TARGET\n", 10)
