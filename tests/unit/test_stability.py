"""The stability rules on fixed data (issue 40): the spread, when the passes disagree, when the
timing pass stops, the unstable line's wording, how every face shows it, and the sentence about
the modes of a run's calls."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from torchscope.analysis import analyze_trace
from torchscope.analysis.results import Machine, Measurements
from torchscope.host.call_modes import mode_note
from torchscope.protocol import CallSeen, passes_disagree, spread, to_builtins
from torchscope.report import render_report
from torchscope.report.hovers import def_markdown
from torchscope.report.html import HtmlView, render_html
from torchscope.worker.stability import unstable_line
from torchscope.worker.timing import MEDIAN_PRECISION, _more

ADVICE = "; rerun, or raise --timing-budget"


def test_spread_is_the_interquartile_range_over_the_median() -> None:
    assert spread([10.0, 10.0, 10.0, 10.0]) == 0.0
    assert spread([1.0, 2.0, 3.0, 4.0, 5.0]) == pytest.approx(2.0 / 3.0)  # (4 - 2) / 3
    assert spread([5.0]) == 0.0 and spread([]) == 0.0


def test_the_passes_disagree_only_when_the_profiled_calls_are_faster_beyond_the_noise() -> None:
    unprofiled = [100.0, 102.0, 98.0, 101.0, 99.0, 100.0, 103.0, 97.0]
    assert not passes_disagree(unprofiled, [180.0, 190.0])  # the profiler adds time: normal
    assert not passes_disagree(unprofiled, [98.0, 99.0])  # within the noise
    assert passes_disagree(unprofiled, [60.0, 62.0])  # a disturbed pass
    assert not passes_disagree(unprofiled, [])


def test_the_timing_pass_stops_once_the_median_is_known_or_the_budget_is_spent() -> None:
    steady = [100.0 + (i % 3) for i in range(20)]
    noisy = [100.0 if i % 2 else 400.0 for i in range(20)]
    assert not _more(steady, 20, MEDIAN_PRECISION, time_left=True)  # known: stop at 20
    assert _more(noisy, 20, MEDIAN_PRECISION, time_left=True)  # not known: more samples
    assert not _more(noisy, 20, MEDIAN_PRECISION, time_left=False)  # the budget is spent
    assert _more(noisy[:2], 20, MEDIAN_PRECISION, time_left=False)  # but at least 3
    assert not _more(noisy[:7], 7, float("inf"), time_left=True)  # ranks: exactly 7


def test_the_unstable_line_names_the_load_or_the_disagreement() -> None:
    calls = [100.0, 101.0, 99.0, 100.0]
    quiet = Machine(0.01, 0.02, 0.0, 2)
    assert unstable_line(calls, [150.0], quiet, disagree=False) == ""
    busy = Machine(0.24, 0.48, 0.0, 2)
    assert unstable_line(calls, [60.0], busy, disagree=True) == (
        "unstable: another process held 48 % of a core during the job" + ADVICE
    )
    stolen = Machine(0.15, 0.0, 0.3, 2)
    assert "the hypervisor took 30 % of a core (steal time)" in unstable_line(
        calls, [60.0], stolen, disagree=True
    )
    said = unstable_line(calls, [60.0], quiet, disagree=True)
    assert said.startswith("unstable: the profiled calls ran faster") and said.endswith(ADVICE)
    waited = unstable_line(calls, [150.0], quiet, disagree=False, wait_us=[60.0] * 4)
    assert (
        waited
        == "unstable: the calls waited for a CPU 60 % of their time (the core was taken)" + ADVICE
    )
    assert unstable_line(calls, [150.0], quiet, disagree=False, wait_us=[20.0] * 4) == ""
    wide = [100.0, 300.0, 100.0, 300.0]
    assert unstable_line(wide, [400.0], quiet, disagree=False).startswith(
        "unstable: the timed calls spread by"
    )


def test_every_face_shows_the_unstable_line_and_no_negative_overhead(
    cpu_traces: dict[str, Any],
) -> None:
    line = "unstable: another process held 48 % of a core during the job" + ADVICE
    m = Measurements(
        cold_us=5000.0,
        call_us=[2.6, 2.7, 2.8],
        dispatch_floor_us=1.1,
        machine=Machine(busy_share=0.24, other_cores=0.48, steal_cores=0.0, cores=2),
        unstable=line,
    )
    report = analyze_trace(cpu_traces["fn8"], m)
    assert not report.verdict.stable and report.verdict.unstable_reason == line
    data = to_builtins(report)
    assert data["verdict"]["stable"] is False and data["machine"]["busy_share"] == 0.24
    assert data["timing"]["samples"] == 3 and data["timing"]["spread"] > 0
    text = render_report(report)
    assert line in text.splitlines()
    assert "machine: 24 % of its 2 cores busy with other work" in text
    assert f"**{line}**" in def_markdown(report, "fn", report.verdict.headline, 0, False)
    assert line in render_html(report, HtmlView("fn", "cell", "fn(x)")).replace("&#x27;", "'")
    stable = analyze_trace(cpu_traces["fn8"], dataclasses.replace(m, unstable=""))
    assert stable.verdict.stable and "unstable" not in render_report(stable)
    # Unprofiled calls slower than every profiled step: the report's own check finds the
    # passes disagreeing, and the negative overhead is not shown anywhere.
    slower = dataclasses.replace(m, unstable="", call_us=[1e6, 1.1e6, 0.9e6])
    disagreeing = analyze_trace(cpu_traces["fn8"], slower)
    assert disagreeing.profiler_overhead_us is None and not disagreeing.verdict.stable
    assert disagreeing.verdict.unstable_reason.endswith(ADVICE)
    assert "profiler overhead" not in render_report(disagreeing)
    assert "Profiler overhead" not in def_markdown(disagreeing, "fn", "", 0, False)


def _call(us: float, training: bool, grad: bool, caller: str) -> CallSeen:
    return CallSeen(us, training, grad, caller)


def test_the_mode_sentence_names_the_calls_profiled_and_the_others() -> None:
    evals = [_call(100.0, False, False, "estimate_loss (train.py:27)")] * 5
    trains = [_call(400.0, True, True, "<module> (train.py:36)")] * 3
    assert mode_note(evals, trains) == (
        "profiled 5 eval calls (no grad) from estimate_loss; the training calls from "
        "train.py:36 took 4× longer: --mode train"
    )
    assert mode_note(trains, []) == ""  # training calls only: nothing to say
    assert mode_note(evals, []).endswith("no training call was seen (--mode train waits for one)")
    assert "different modes" in mode_note(evals[:2] + trains[:1], [])
