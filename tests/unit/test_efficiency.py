"""Efficiency on real GPU traces (spec-sheet peaks) and the thread-contention rule."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from torchscope.analysis import analyze, load_trace
from torchscope.analysis.index.context import build_context
from torchscope.analysis.measure.efficiency import measure_efficiency
from torchscope.analysis.measure.opclass import elementwise, reduction, rng
from torchscope.analysis.measure.opclass import op_cost as op_work
from torchscope.analysis.measure.opclass.passes import OUT_ARITY, TWO_OUTS, out_count
from torchscope.analysis.results import Measurements
from torchscope.protocol import to_builtins

TRACES = Path(__file__).resolve().parents[2] / "tests" / "data" / "traces"
BERT = TRACES / "tracelens_bert_small_h100_torch26.json.gz"


def test_gemm_kernels_get_tflops_against_the_spec_sheet() -> None:
    report = to_builtins(analyze(load_trace(BERT)))
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
    from torchscope.report import render_report

    report = analyze(load_trace(BERT))
    text = render_report(report)
    [peaks] = [line for line in text.splitlines() if line.startswith("peaks: ")]
    assert "spec-sheet peak of NVIDIA H100" in peaks and "not measured" in peaks
    assert "achieved" in text
    addmm = next(o for o in report.top_ops if o.name == "aten::addmm")
    assert addmm.gflops is not None and addmm.efficiency is not None
    row = next(line for line in text.splitlines() if line.strip().startswith("aten::addmm"))
    assert f"{addmm.efficiency * 100:.0f} % of spec-sheet peak" in row


def _recorded_work(
    calls: list[str], folder: Path
) -> tuple[dict[str, tuple[float, int]], list[Any]]:
    """Each call, run under the real profiler with ``record_shapes`` and read back from the
    Kineto trace it writes: (bytes ``op_work`` gives its first aten op, its ``out_count``);
    and all the recorded ops."""
    torch = pytest.importorskip("torch")
    from torch.profiler import profile, record_function

    x, y, d = torch.rand(64, 32), torch.rand(64, 32), torch.empty(64, 32)
    names = {"torch": torch, "x": x, "y": y, "d": d}
    with profile(record_shapes=True) as prof:
        for i, call in enumerate(calls):
            with record_function(f"call{i}"):
                eval(call, names)
    prof.export_chrome_trace(str(folder / "trace.json"))
    events = json.loads((folder / "trace.json").read_text())["traceEvents"]
    ops = sorted((e for e in events if e.get("cat") == "cpu_op"), key=lambda e: e["ts"])
    out: dict[str, tuple[float, int]] = {}
    for i, call in enumerate(calls):
        mark = next(e for e in events if e.get("name") == f"call{i}")
        first = next(e for e in ops if e["ts"] >= mark["ts"] and e["name"].startswith("aten::"))
        work = op_work(first["name"], first["args"])
        assert work is not None, (call, first)
        out[call] = (work.bytes, out_count(first["name"], first["args"]))
    return out, ops


def test_out_variants_write_their_out_tensor_and_read_only_the_inputs(tmp_path: Path) -> None:
    """``torch.mul(x, 0.5, out=y)`` moves x in and y out, as ``torch.mul(x, 0.5)`` does; the
    out tensor is recorded as one more argument and must not count as an input too."""
    size = 64 * 32 * 4
    scalar = 8  # a Python float is recorded as a 0-dim double ("wrapped number")
    got, ops = _recorded_work(
        [
            "torch.mul(x, 0.5, out=d)",
            "torch.mul(x, 0.5)",
            "torch.add(x, y, out=d)",
            "torch.add(x, y)",
            "torch.sigmoid(x, out=d)",
            "torch.sigmoid(x)",
            "torch.mul(x, y)",  # two tensors, no out: same argument count as mul.out(x, 0.5)
            "torch.clamp(x, min=0.0, out=d)",
            "torch.add(x, 1.0, out=d)",
            "x.mul_(1.0)",
            "d.copy_(x)",
        ],
        tmp_path,
    )
    assert got["torch.mul(x, 0.5, out=d)"] == (2 * size + scalar, 1)
    assert got["torch.mul(x, 0.5)"] == (2 * size + scalar, 0)
    assert got["torch.add(x, y, out=d)"] == (3 * size, 1)
    assert got["torch.add(x, y)"] == (3 * size, 0)
    assert got["torch.sigmoid(x, out=d)"] == (2 * size, 1)
    assert got["torch.sigmoid(x)"] == (2 * size, 0)
    assert got["torch.mul(x, y)"] == (3 * size, 0)
    assert got["torch.clamp(x, min=0.0, out=d)"] == (2 * size, 1)
    assert got["x.mul_(1.0)"] == (2 * size + scalar, 0)
    assert got["d.copy_(x)"] == (2 * size, 0)
    # The Python scalar 1.0 made into a 0-dim tensor: a copy_ of a few bytes, no rate.
    scalar_copies = [
        e for e in ops if e["name"] == "aten::copy_" and e["args"]["Input Dims"][0] == []
    ]
    assert scalar_copies and all(op_work(e["name"], e["args"]) is None for e in scalar_copies)


def test_out_arity_table_matches_the_aten_schemas() -> None:
    """``OUT_ARITY``/``TWO_OUTS`` against the installed torch: every ``out`` overload of a known
    op is in the table, unless a functional overload with as many arguments ends in as many
    tensors (then the two cannot be told apart and the call is taken as functional)."""
    torch = pytest.importorskip("torch")

    def is_tensor(arg: Any) -> bool:
        t = arg.type
        if isinstance(t, torch._C.OptionalType):
            t = t.getElementType()
        return isinstance(t, torch._C.TensorType)

    for base in sorted(elementwise.NAMES | reduction.NAMES | rng.NAMES):
        functional: dict[int, set[int]] = {}
        outs: set[tuple[int, int]] = set()
        for schema in torch._C._jit_get_schemas_for_operator(f"aten::{base}"):
            args = schema.arguments
            n_out = sum(1 for a in args if a.is_out)
            if n_out:
                outs.add((len(args), n_out))
                continue
            trailing = 0
            for a in reversed(args):
                if not is_tensor(a):
                    break
                trailing += 1
            functional.setdefault(len(args), set()).add(trailing)
        expected = {(n, k) for n, k in outs if all(t < k for t in functional.get(n, set()))}
        table = {(n, 1) for n in OUT_ARITY.get(base, ())} | {(n, 2) for b, n in TWO_OUTS if b == base}
        assert table == expected, base
