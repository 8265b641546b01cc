"""Kernel → line mapping of ``analysis/multi/compiled_lines.py`` on compiled traces recorded by
tests/data/compiled/record.py (real Inductor kernels and provenance, torch 2.13 on the CPU):
``head`` (mm, then relu · scale · sum fused into one C++ kernel) and ``breaks`` (a graph break
between two identical ``torch.mm`` graphs, which only the order of their calls tells apart)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from torchscope.analysis.multi.compiled_lines import CompiledLines, compiled_lines
from torchscope.ingest import load_trace
from torchscope.protocol import GraphBreakSite, KernelSource
from torchscope.report.compare import lines_text

DATA = Path(__file__).resolve().parents[1] / "data" / "compiled"
DEF = 100  # the recorded lines are relative to the def: put the function anywhere


def mapped(name: str, **eager: float) -> CompiledLines:
    recorded: dict[str, Any] = json.loads((DATA / f"{name}_sources.json").read_text())
    sources = [
        KernelSource(**{**s, "lines": [DEF + n for n in s["lines"]]}) for s in recorded["sources"]
    ]
    breaks = [GraphBreakSite(**{**b, "line": DEF + b["line"]}) for b in recorded["breaks"]]
    eager_us = {DEF + int(k[1:]): v for k, v in eager.items()}
    return compiled_lines(load_trace(DATA / f"{name}.json.gz"), sources, breaks, eager_us)


def test_the_fused_kernel_is_one_group_on_each_of_its_lines() -> None:
    lines = mapped("head", L1=6.0, L2=3.0)
    by_line = {line.line: line for line in lines.lines}
    assert sorted(by_line) == [DEF + 2, DEF + 3, DEF + 4, DEF + 5]
    mm, relu = by_line[DEF + 2], by_line[DEF + 3]
    assert mm.kernels == ["aten::mm"] and mm.fused_with == []
    assert relu.fused_with == [DEF + 4, DEF + 5]
    assert by_line[DEF + 4].compiled_us == relu.compiled_us == by_line[DEF + 5].compiled_us
    # counted once: the total is the two kernels, not mm + 3 × fused
    assert lines.total_us == pytest.approx(mm.compiled_us + relu.compiled_us)
    assert mm.share + relu.share == pytest.approx(1.0)


def test_kernel_times_are_the_trace_s_events_per_step() -> None:
    with gzip.open(DATA / "head.json.gz", "rt") as f:
        events = json.load(f)["traceEvents"]
    steps = sum(1 for e in events if str(e.get("name", "")).startswith("ProfilerStep#"))
    fused = sum(e["dur"] for e in events if "cpp_fused_mul_relu_sum" in str(e.get("name")))
    [kernel] = [k for k in mapped("head").kernels if "cpp_fused" in k.name]
    assert kernel.us == pytest.approx(fused / steps, rel=1e-6)
    assert kernel.calls == 1.0 and set(kernel.ops) == {"relu", "mul", "sum"}


def test_identical_graphs_either_side_of_a_break_keep_their_own_lines() -> None:
    lines = mapped("breaks")
    assert sorted(k.lines[0] for k in lines.kernels) == [DEF + 2, DEF + 4]
    assert all(k.extern and k.calls == 1.0 for k in lines.kernels)
    [broke] = [line for line in lines.lines if line.graph_break is not None]
    assert broke.line == DEF + 3 and "print" in (broke.graph_break or "")
    assert broke.kernels == []
    text = "\n".join(lines_text(lines))
    assert f"line {DEF + 3}: eager — → compiled: no kernel; graph break here" in text


def test_without_provenance_the_note_is_said_once_and_no_line_is_made_up() -> None:
    note = "this torch has no Inductor kernel profiling or provenance tracking"
    lines = compiled_lines(load_trace(DATA / "head.json.gz"), [], [], {}, note)
    assert lines.lines == [] and lines.kernels == []
    assert lines_text(lines) == [f"  per line: {note}"]


# A compiled ``torch.add(torch.matmul(x, w), b)`` at 4096 on an H200 (torch 2.11, recorded by
# the compare job on a lent GPU): Inductor calls ``extern_kernels.addmm``, which copies the bias
# (DtoD) and launches the GEMM. The CPU returns after launching, so the device runs its 2.7 ms
# GEMMs steps behind the CPU's 0.4 ms steps: no kernel or copy starts inside its own step.
H200 = DATA / "h200_addmm_4096.json.gz"


def _launched_device_us(trace: Any) -> float:
    """The GEMMs' and bias copies' device time per step, straight from the trace's events."""
    spans = [*trace.kernels, *trace.memcpys]
    return sum(s.end - s.start for s in spans) / 5  # five profiled steps


def test_an_extern_kernel_on_a_gpu_takes_its_launched_device_time() -> None:
    trace = load_trace(H200)
    source = KernelSource("None", "extern_kernels.addmm", [15], ["addmm"], True, 0)
    lines = compiled_lines(trace, [source], [], {15: 2720.0})
    (kernel,) = lines.kernels
    assert kernel.name == "aten::addmm" and kernel.lines == [15]
    # Its device time (the GEMM and the bias copy), not the CPU op's ~150 µs.
    assert kernel.us == pytest.approx(_launched_device_us(trace), rel=0.01)
    assert lines.lines[0].compiled_us == pytest.approx(kernel.us)


def test_a_gpu_step_owns_the_copies_it_launched() -> None:
    from torchscope.analysis.multi.inventory import inventory

    copies = inventory(load_trace(H200)).copies
    assert [(c.kind, c.within) for c in copies] == [("DtoD", "aten::addmm")]
    assert copies[0].bytes == 4096 * 4096 * 4 and copies[0].calls == 1.0
