"""Per-line times inside ``torch.compile``: each compiled kernel's time on the lines it came from.

Inputs: the compiled side's trace, profiled with Inductor's kernel profiling on (each generated
CPU kernel is an op ``graph_<n>_<kernel>`` inside ``## Call CompiledFxGraph <key> ##``; a
Triton kernel is a device kernel under its own name; an extern kernel such as
``extern_kernels.mm`` is the aten op it calls, ``aten::mm``, directly inside the graph call),
and the worker's :class:`~torchscope.protocol.KernelSource` list (Inductor's provenance: kernel
→ the lines of the profiled file its FX nodes came from, ``worker/kernel_provenance.py``).

A kernel's time is its events' inclusive time summed over the profiled steps, divided by their
number (per call, like ``analysis/measure/lines.py``). A kernel that fused several lines is
one group on each of them: each of its lines shows the whole kernel's time and names the others in
``fused_with``; the total counts it once. Kernels the trace shows but the mapping does not know
(no provenance) are listed with no lines; they cannot be put on a line.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from dataclasses import dataclass, field
from typing import Callable, Optional

from ...ingest import Span, Trace
from ...protocol import GraphBreakSite, KernelSource
from ..index.context import Context, build_context
from ..measure.launch import launch_steps

_GRAPH_CALL = re.compile(r"CompiledFxGraph (\w+)")
_CPP_KERNEL = re.compile(r"^graph_(?P<id>\d+)_(?P<kernel>.+)$")
EXTERN_PREFIX = "extern_kernels."


@dataclass(frozen=True)
class CompiledKernel:
    """One kernel of the compiled side, per call of the function."""

    name: str
    """As in the trace (``graph_0_cpp_fused_mul_relu_sum_0``, ``aten::mm``)."""
    graph: Optional[str]
    lines: list[int]
    ops: list[str]
    us: float
    calls: float
    extern: bool = False


@dataclass(frozen=True)
class CompiledLine:
    """One line of the profiled file: eager against compiled, per call."""

    line: int
    compiled_us: float
    fused_with: list[int]
    """The other lines of this line's kernels."""
    kernels: list[str]
    share: float
    """``compiled_us`` over the total kernel time (each kernel counted once)."""
    eager_us: Optional[float] = None
    graph_break: Optional[str] = None
    """Dynamo's reason when the graph breaks on this line ('' when it gave none)."""


@dataclass(frozen=True)
class CompiledLines:
    kernels: list[CompiledKernel]
    lines: list[CompiledLine]
    total_us: float
    """All kernels' time per call, each once (including those with no line)."""
    note: str = ""
    """Why there are no per-line times ('' when there are)."""
    breaks: list[GraphBreakSite] = field(default_factory=list)


@dataclass(frozen=True)
class KernelLines:
    """What the compiled side's per-line times are computed from, beside its trace (issue 42):
    the kernels' provenance and graph breaks the worker read, and the eager side's time per
    line (µs per call). The analysis child computes them with the trace it already loaded."""

    sources: list[KernelSource]
    breaks: list[GraphBreakSite]
    eager_us: dict[int, float]
    note: str = ""

    def of(self, trace: Trace) -> CompiledLines:
        return compiled_lines(trace, self.sources, self.breaks, self.eager_us, self.note)


def _kernel_name(name: str) -> str:
    """The trace's name → Inductor's: ``graph_0_cpp_fused_relu_0`` → ``cpp_fused_relu_0``,
    ``aten::mm`` → ``extern_kernels.mm``; a Triton kernel's is the same."""
    cpp = _CPP_KERNEL.match(name)
    if cpp:
        return cpp["kernel"]
    if name.startswith("aten::"):
        return EXTERN_PREFIX + name[len("aten::") :]
    return name


GraphCall = tuple[float, float, str, int]
"""Start, end, cache key and Inductor's graph id of one ``## Call CompiledFxGraph`` span."""


def _graph_calls(trace: Trace, sources: list[KernelSource]) -> list[GraphCall]:
    """``## Call CompiledFxGraph <key> ##`` spans (ops or annotations, by torch version), each
    with its Inductor graph id: that of a CPU kernel inside it (``graph_<id>_…``), else — a
    graph of extern kernels only — by order: such graphs run in the order they were compiled,
    so the k-th such call is the (k mod n)-th of them by id. (The key cannot tell graphs
    apart: identical graphs share one, and with the FX graph cache off the trace says
    ``None``.)"""
    kernels = [(op.start, int(m["id"])) for op in trace.ops if (m := _CPP_KERNEL.match(op.name))]
    with_cpp = {gid for _, gid in kernels}
    extern_only = sorted({s.graph_id for s in sources} - with_cpp)
    spans = sorted(
        (span.start, span.end, found.group(1))
        for span in [*trace.ops, *trace.annotations]
        if (found := _GRAPH_CALL.search(span.name))
    )
    calls = []
    k = 0
    for start, end, key in spans:
        inside = [gid for t, gid in kernels if start <= t <= end]
        if inside:
            gid = inside[0]
        else:
            gid = extern_only[k % len(extern_only)] if extern_only else -1
            k += 1
        calls.append((start, end, key, gid))
    return calls


def _within_call(calls: list[GraphCall], start: float, end: float) -> Optional[GraphCall]:
    """The innermost graph call around ``[start, end]``."""
    around = [c for c in calls if c[0] <= start and end <= c[1]]
    return min(around, key=lambda c: c[1] - c[0]) if around else None


def _device_time(ctx: Context) -> Callable[[Span], float]:
    """Per op, the device time of the kernels, copies and memsets its runtime calls launched:
    an extern kernel's time on a GPU, where its CPU op returns once it has launched (an
    H200's compiled ``aten::addmm`` took 145 µs of CPU for a 2.7 ms GEMM)."""
    trace, links = ctx.trace, ctx.links
    runtime = trace.runtime
    rows = sorted(
        (runtime[r].start, runtime[r].track, span.end - span.start)
        for spans, rts in (
            (trace.kernels, links.kernel_rt),
            (trace.memcpys, links.memcpy_rt),
            (trace.memsets, links.memset_rt),
        )
        for span, r in zip(spans, rts)
        if r >= 0
    )
    starts = [row[0] for row in rows]

    def launched(op: Span) -> float:
        lo, hi = bisect_left(starts, op.start), bisect_right(starts, op.end)
        return sum(row[2] for row in rows[lo:hi] if row[1] == op.track)

    return launched


Where = tuple[str, Optional[str], int]
"""A kernel's trace name, its graph call's key (None: not known) and graph id."""


def _event_totals(
    trace: Trace, sources: list[KernelSource]
) -> tuple[dict[Where, list[float]], int]:
    """Inclusive µs and calls of each kernel event over the steps, and the number of steps."""
    ctx = build_context(trace, None)
    parent = ctx.nest.op_parent
    calls = _graph_calls(trace, sources)
    launched = _device_time(ctx) if ctx.device_run else None
    totals: dict[Where, list[float]] = {}
    for i, op in enumerate(trace.ops):
        if ctx.step_of_op[i] < 0 or _GRAPH_CALL.search(op.name):
            continue
        span = _within_call(calls, op.start, op.end)
        if not _CPP_KERNEL.match(op.name):
            if span is None or not op.name.startswith("aten::"):
                continue
            p = parent[i]
            if p >= 0 and _within_call([span], trace.ops[p].start, trace.ops[p].end):
                continue  # extern kernels are the aten ops directly inside a graph call
        row = totals.setdefault(
            (op.name, span[2], span[3]) if span else (op.name, None, 0), [0.0, 0.0]
        )
        row[0] += launched(op) if launched and not _CPP_KERNEL.match(op.name) else op.end - op.start
        row[1] += 1
    triton = {s.kernel for s in sources}
    # By the step that launched them: without a sync per step the device runs behind the CPU.
    step_of = launch_steps(ctx, trace.kernels, "kernel")
    for k, kernel in enumerate(trace.kernels):  # CUDA: Triton kernels under their own names
        if step_of[k] >= 0 and kernel.name in triton:
            row = totals.setdefault((kernel.name, None, 0), [0.0, 0.0])
            row[0] += kernel.end - kernel.start
            row[1] += 1
    return totals, max(1, len(ctx.steps))


def kernel_times(trace: Trace, sources: list[KernelSource]) -> list[CompiledKernel]:
    """The trace's kernels that the mapping names (plus generated kernels it does not), with
    their time per call; a kernel whose graph is not known (a device kernel) is found by name."""
    index = {(s.kernel, s.graph_id): s for s in sources}
    by_name = {s.kernel: s for s in sources}
    totals, steps = _event_totals(trace, sources)
    out = []
    for (name, graph, gid), (us, count) in totals.items():
        kernel = _kernel_name(name)
        source = index.get((kernel, gid)) if graph else by_name.get(kernel)
        if source is None and name.startswith("aten::"):
            continue  # an aten op of the graph wrapper with no provenance: not a kernel
        out.append(
            CompiledKernel(
                name,
                graph,
                list(source.lines) if source else [],
                list(source.ops) if source else [],
                us / steps,
                count / steps,
                bool(source and source.extern),
            )
        )
    return sorted(out, key=lambda c: -c.us)


def compiled_lines(
    trace: Trace,
    sources: list[KernelSource],
    breaks: list[GraphBreakSite],
    eager_us: dict[int, float],
    note: str = "",
) -> CompiledLines:
    """Each line's compiled time from its kernels, next to its eager time (``eager_us``: line →
    µs per call) and the graph breaks on it."""
    kernels = kernel_times(trace, sources) if sources else []
    total = sum(k.us for k in kernels)
    per_line: dict[int, list[CompiledKernel]] = {}
    for kernel in kernels:
        for line in kernel.lines:
            per_line.setdefault(line, []).append(kernel)
    reasons = {b.line: b.reason for b in breaks}
    lines = []
    for line in sorted({*per_line, *reasons}):
        mine = per_line.get(line, [])
        us = sum(k.us for k in mine)
        others = sorted({n for k in mine for n in k.lines if n != line})
        lines.append(
            CompiledLine(
                line,
                us,
                others,
                [k.name for k in mine],
                us / total if total > 0 else 0.0,
                eager_us.get(line),
                reasons.get(line),
            )
        )
    if not note and sources and not kernels:
        note = "the compiled trace has no kernel events that Inductor's provenance names"
    return CompiledLines(kernels, lines, total, note, list(breaks))
