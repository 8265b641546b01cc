"""No claim a report can contradict (issue 55): the checker (``verdict/consistency.py``)
catches each kind of contradiction on a report built to have it, the codec holds every report
and sweep it encodes or decodes to it, and the suite's hook (``tests/conftest.py``) would fail
the test that made one."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from torchscope.analysis import Finding, Measurements, Report, Sweep, SweepPoint, analyze_trace
from torchscope.analysis.verdict.consistency import contradictions
from torchscope.analysis.verdict.cost_basis import NOTE_START, profiled_cost_note
from torchscope.analysis.verdict.sweep_check import sweep_problems
from torchscope.protocol import from_builtins, to_builtins
from torchscope.report.sweep import crossover_text

from .conftest import CPU_TRACES


@pytest.fixture(scope="module")
def report() -> Report:
    """The guide's 512×512 call, timed unprofiled at 3.1 ms per call."""
    return analyze_trace(CPU_TRACES / "fn512.json.gz", Measurements(0.0, [3_100.0] * 3, 1.1))


def test_the_report_agrees_with_itself(report: Report) -> None:
    assert contradictions(report) == []


def test_a_contradicting_headline_is_caught(report: Report) -> None:
    """The issue's "arithmetic intensity 16 FLOP/B, below the ridge point of 6.51"."""
    v = replace(
        report.verdict,
        id="memory-bound",
        headline="memory-bound (CPU): 3.1 ms per call, aten::add at 5 GB/s; its arithmetic "
        "intensity 16 FLOP/B, below the ridge point of 6.51 FLOP/B; fuse the chain",
    )
    found = contradictions(replace(report, verdict=v))
    assert any("intensity 16 FLOP/B is said to be below the ridge point 6.51" in c for c in found)
    # "below the ridge" is memory-bound's claim alone
    other = replace(v, id="overhead-bound", headline=v.headline.replace("16 FLOP/B", "2 FLOP/B"))
    assert any(
        "says its ops are below" in c for c in contradictions(replace(report, verdict=other))
    )


def test_shares_and_comparatives_are_caught(report: Report) -> None:
    v = replace(report.verdict, headline="overhead-bound (CPU): 130 % of the call in dispatch")
    assert any("130 % of" in c for c in contradictions(replace(report, verdict=v)))
    dispatch = replace(
        report.verdict, headline="overhead-bound (CPU): 3.1 ms per call, ~97 % dispatch"
    )
    found = contradictions(replace(report, verdict=dispatch))
    assert any("says ~97 % dispatch, its cause's share is" in c for c in found)
    peak = replace(
        report.verdict,
        efficiency=0.12,
        headline="low-efficiency (CPU): 3.1 ms per call in aten::mm — 52 GFLOP/s, 40 % of this "
        "CPU's measured peak",
    )
    found = contradictions(replace(report, verdict=peak))
    assert any("says 40 % of the peak, its efficiency is 12%" in c for c in found), found
    slower = replace(report.verdict, headline="x: with 1 thread 4 ms (0.78× faster)")
    assert any("0.78× faster" in c for c in contradictions(replace(report, verdict=slower)))


def test_a_finding_costs_at_most_its_step_and_says_it_is_a_profiled_figure(
    report: Report,
) -> None:
    """A 17.1 ms finding in a 6.8 ms call (issue 55): over the longest step it is wrong; over
    the unprofiled call it needs the note that costs are per profiled step."""
    longest = max(max(s.wall_us, s.span_us) for s in report.steps)
    huge = Finding("memory-bound-chain", "information", "a chain", longest * 2)
    found = contradictions(replace(report, findings=[*report.findings, huge]))
    assert any("more than the longest step" in c for c in found)
    call = report.verdict.cpu_us
    assert longest > call  # the profiled steps ran slower than the timed calls
    over = Finding("memory-bound-chain", "information", "a chain", (call + longest) / 2)
    bare = replace(report, findings=[over], notes=[])
    assert any("no note says" in c for c in contradictions(bare))
    note = profiled_cost_note(report.verdict, report.steps, [over])
    assert note is not None and note.startswith(NOTE_START)
    assert contradictions(replace(bare, notes=[note])) == []


def test_the_codec_holds_every_report_to_the_checker(
    report: Report, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Encoding a report (``--json``, LSP and MCP replies) and encoding or decoding a sweep (a
    frame between processes) run the self-check, and log what they find for the suite's
    hook."""
    log = tmp_path / "self-check.log"
    monkeypatch.setenv("TORCHSCOPE_SELF_CHECK_LOG", str(log))  # not the session's log
    bad = replace(report, verdict=replace(report.verdict, headline="x (0.5× faster)"))
    with pytest.raises(AssertionError, match="contradicts itself"):
        to_builtins(bad)
    rows = [
        point(1, 0.2, "overhead-bound", "dispatch"),
        point(2, 0.3, "overhead-bound", "dispatch"),
    ]
    data = to_builtins(Sweep("N", "f(N)", rows))
    data["points"][1]["compute_share"] = 1.0  # "compute 100 %" beside overhead-bound
    with pytest.raises(AssertionError, match="sweep contradicts itself"):
        from_builtins(Sweep, data)
    text = log.read_text()
    assert "0.5× faster" in text and "N=2 reads compute 100%" in text


def point(n: int, share: float, verdict: str, cause: str) -> SweepPoint:
    return SweepPoint(n, 100.0, 100.0, 0.0, share, 100.0 * share, verdict, cause=cause)


def test_a_sweep_row_and_its_crossover_line_agree() -> None:
    """A CNN's rows read "compute 100 %" beside overhead-bound, and "try larger sizes" stood
    under rows about threads (issue 55)."""
    rows = [point(1, 1.0, "overhead-bound", "threads"), point(2, 0.3, "overhead-bound", "threads")]
    assert any("compute 100%" in c for c in sweep_problems(rows, ""))
    threads = [
        point(1, 0.3, "overhead-bound", "threads"),
        point(2, 0.4, "overhead-bound", "threads"),
    ]
    line = crossover_text(threads, None)
    assert "torch.set_num_threads(1)" in line and "try larger sizes" not in line
    assert sweep_problems(threads, line) == []
    assert sweep_problems(
        threads, "crossover: none — still overhead-bound at N=2: try larger sizes"
    )
    for cause in ("dispatch", "compute", "bandwidth"):  # dispatch, small shapes, small tensors
        rows = [replace(p, cause=cause) for p in threads]
        assert "try larger sizes" in crossover_text(rows, None)
        assert sweep_problems(rows, crossover_text(rows, None)) == []
    crossed = [
        point(1, 0.3, "overhead-bound", "dispatch"),
        point(2, 0.9, "low-efficiency", "compute"),
    ]
    assert (
        sweep_problems(crossed, "crossover: low-efficiency from N=2 (overhead-bound at N=1)") == []
    )
    assert sweep_problems(crossed, "crossover: compute-bound from N=2")


def test_page_faults_are_a_share_of_the_time_the_call_ran() -> None:
    """A loaded run: 100 ms per call, 85 ms of it waiting for a CPU. 1000 faults × 5 µs = 5 ms
    is 5 % of the call but 33 % of the 15 ms it ran — the share the causes give it — so when
    they name page faults, allocation-churn is there to measure them."""
    m = Measurements(
        0.0,
        [100_000.0] * 3,
        1.1,
        page_faults=[1000.0] * 3,
        page_fault_us=5.0,
        wait_us=[85_000.0] * 3,
    )
    report = analyze_trace(CPU_TRACES / "fn512.json.gz", m)
    assert contradictions(report) == []
    (churn,) = [f for f in report.findings if f.rule == "allocation-churn"]
    assert churn.details["page_fault_share"] == pytest.approx(5_000 / 15_000)
