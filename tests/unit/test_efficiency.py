"""Efficiency on real GPU traces (spec-sheet peaks) and the thread-contention rule."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

from torchscope.analysis import analyze, load_trace
from torchscope.analysis.context import build_context
from torchscope.analysis.efficiency import measure_efficiency
from torchscope.analysis.report import Measurements

TRACES = Path(__file__).resolve().parents[2] / "tests" / "data" / "traces"
BERT = TRACES / "tracelens_bert_small_h100_torch26.json.gz"


def test_gemm_kernels_get_tflops_against_the_spec_sheet() -> None:
    report = analyze(load_trace(BERT)).to_dict()
    assert report["peaks"]["source"] == "spec-sheet"
    gemms = [o for o in report["top_ops"] if o["name"] in ("aten::addmm", "aten::mm", "aten::bmm")]
    assert gemms and all(o["gflops"] and 0 < o["efficiency"] <= 1 for o in gemms)


def test_one_gemm_by_hand_from_the_json() -> None:
    """The first aten::addmm: 2·M·N·K from its Input Dims over the kernels its launches ran."""
    with gzip.open(BERT, "rt") as f:
        events = json.load(f)["traceEvents"]
    ctx = build_context(load_trace(BERT), None)
    eff = measure_efficiency(ctx)
    ops = ctx.trace.ops
    i = next(i for i in sorted(eff.time_us) if ops[i].name == "aten::addmm")
    raw_ops = [e for e in events if e.get("cat") == "cpu_op" and e["name"] == "aten::addmm"]
    origin = next(e["ts"] for e in events if e.get("ph") == "X")  # as normalise does
    raw = next(e for e in raw_ops if abs((e["ts"] - origin) - ops[i].start) < 1e-3)
    (m, k), (_, n) = raw["args"]["Input Dims"][1], raw["args"]["Input Dims"][2]
    flops = 2 * m * n * k
    launches = {
        e["args"]["correlation"]
        for e in events
        if e.get("cat") in ("cuda_runtime", "cuda_driver")
        and e["tid"] == raw["tid"]
        and raw["ts"] <= e["ts"] <= raw["ts"] + raw["dur"]
    }
    kernel_us = sum(
        e["dur"]
        for e in events
        if e.get("cat") == "kernel" and e["args"].get("correlation") in launches
    )
    assert kernel_us > 0
    assert eff.work[i].flops == flops
    rates = eff.rates(eff.totals([i]))
    assert rates.gflops is not None
    assert abs(rates.gflops - flops / kernel_us / 1e3) <= 1e-6 * rates.gflops


def _with_timing(single: list[float], multi: list[float]) -> set[str]:
    m = Measurements(
        cold_us=1e4, call_us=multi, dispatch_floor_us=2.0, threads=2, single_thread_us=single
    )
    return {f.rule for f in analyze(load_trace(BERT), m).findings}


def test_thread_contention_needs_a_confident_win_of_20_percent() -> None:
    multi = [8000.0, 7000.0, 9000.0, 8500.0, 7600.0, 8100.0]
    assert "thread-contention" in _with_timing([60.0, 70.0, 65.0, 62.0, 61.0, 66.0], multi)
    assert "thread-contention" not in _with_timing([m * 0.95 for m in multi], multi)
    assert "thread-contention" not in _with_timing([60.0, 70.0, 65.0], multi[:3])  # too few


def test_terminal_report_names_the_spec_sheet_peak_and_the_achieved_rates() -> None:
    from torchscope.analysis import render_report

    report = analyze(load_trace(BERT))
    text = render_report(report)
    [peaks] = [line for line in text.splitlines() if line.startswith("peaks: ")]
    assert "spec-sheet peak of NVIDIA H100" in peaks and "not measured" in peaks
    assert "achieved" in text
    addmm = next(o for o in report.top_ops if o.name == "aten::addmm")
    assert addmm.gflops is not None and addmm.efficiency is not None
    row = next(line for line in text.splitlines() if line.strip().startswith("aten::addmm"))
    assert f"{addmm.efficiency * 100:.0f} % of spec-sheet peak" in row
