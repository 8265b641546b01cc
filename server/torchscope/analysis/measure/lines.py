"""Per-line numbers from the worker's ``torchscope:L<n>`` markers: hot lines.

The worker profiles a copy of the function whose every statement runs inside a marker named
after its line (see ``worker/line_markers.py``). Here each op, runtime call and — through the
runtime call's correlation — each kernel and copy is given to the *innermost* marker around it,
so a loop body's ops go to the body's lines and a call into another function counts for the
calling line. A line's CPU time is its markers' time minus the time of markers nested inside
(a ``for`` header keeps only what the header itself cost). Everything is per call of the
function; counts and device times are totals over the profiled steps divided by their number.

Shares. Profiled times carry the profiler's own cost per recorded op and marker (µs each), so a
line of a few small ops looks several times slower than it is next to a line of one long op
(``examples/lines.py::hot_and_cold``: the 4-element add's line 0.17-0.32 ms profiled, 0.10-0.24
ms without the profiler). So when the worker timed each line without the profiler
(``Measurements.line_us``, ``worker/line_timing.py``: the same marked copy, its markers replaced
by a clock, the same exclusive-time rule) a line's share is its median over those calls divided
by the sum of all lines' medians, and min/median/max are over those calls; otherwise (a trace
analysed on its own) the profiled medians over steps. ``cpu_us`` is the share of the unprofiled
time per call when the worker measured it; ``profiled_cpu_us`` keeps the profiled median.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ...ingest import LINE_MARKER_PREFIX
from ..index.columns import median
from ..index.context import Context
from ..index.link import SYNC_CALLS, copy_kind
from .parts import LineCopy, LineKernel, LineOp, LineStats

if TYPE_CHECKING:
    pass

#: Lines whose share of the function's time is at least this get an inlay hint by default
#: (the editor setting overrides it): below ~5 % a line is rarely worth a look.
DEFAULT_HOT_SHARE = 0.05


def _marker_line(name: str) -> int | None:
    if not name.startswith(LINE_MARKER_PREFIX):
        return None
    try:
        return int(name[len(LINE_MARKER_PREFIX) :])
    except ValueError:
        return None


def _shapes(args: Any) -> str:
    dims = args.get("Input Dims") if isinstance(args, Mapping) else None
    if not isinstance(dims, list):
        return ""
    shown = [f"[{', '.join(str(d) for d in dim)}]" for dim in dims if isinstance(dim, list) and dim]
    return " × ".join(shown)


@dataclass
class _Acc:
    cpu_by_step: dict[int, float] = field(default_factory=dict)
    hits: int = 0
    device_us: float = 0.0
    syncs: int = 0
    sync_us: float = 0.0
    ops: dict[str, list[Any]] = field(default_factory=dict)  # name → [calls, self_us, shapes]
    kernels: dict[str, list[float]] = field(default_factory=dict)  # name → [calls, device_us]
    copies: dict[str, list[float]] = field(default_factory=dict)  # kind → [calls, bytes, us]


def innermost_line(ctx: Context, ann: int) -> int | None:
    """The line of the innermost marker at or above annotation ``ann`` (None when none)."""
    anns = ctx.trace.annotations
    for a in ctx.nest.annotation_chain(ann) if ann >= 0 else ():
        line = _marker_line(anns[a].name)
        if line is not None:
            return line
    return None


class _LineWalk:
    """One pass over a trace's markers, ops and runtime calls, filling one ``_Acc`` per line.

    The passes are methods of their own (the markers' exclusive time, the ops, the runtime
    calls with what they launched); ``line_stats`` runs them in order and turns the totals
    into per-call numbers."""

    def __init__(self, ctx: Context, marker_line: list[int | None]) -> None:
        self.ctx = ctx
        self.marker_line = marker_line
        self.acc: dict[int, _Acc] = {}

    def enclosing_marker(self, ann: int) -> int:
        """The innermost marker at or above annotation ``ann`` (-1 when none)."""
        marker_line = self.marker_line
        for a in self.ctx.nest.annotation_chain(ann) if ann >= 0 else ():
            if marker_line[a] is not None:
                return a
        return -1

    def bucket(self, marker: int) -> _Acc:
        line = self.marker_line[marker]
        assert line is not None
        found = self.acc.get(line)
        if found is None:
            found = self.acc[line] = _Acc()
        return found

    def add_marker_times(self) -> None:
        """Exclusive CPU time per marker: its duration minus its nearest nested markers'."""
        ctx, marker_line = self.ctx, self.marker_line
        anns, step_of_ann = ctx.trace.annotations, ctx.step_of_ann
        exclusive = [
            a.end - a.start if line is not None else 0.0 for a, line in zip(anns, marker_line)
        ]
        for a, line in enumerate(marker_line):
            if line is None or step_of_ann[a] < 0:
                continue
            parent = self.enclosing_marker(ctx.nest.ann_parent[a])
            if parent >= 0:
                exclusive[parent] -= anns[a].end - anns[a].start
        for a, line in enumerate(marker_line):
            step = step_of_ann[a]
            if line is None or step < 0:
                continue
            entry = self.bucket(a)
            entry.hits += 1
            entry.cpu_by_step[step] = entry.cpu_by_step.get(step, 0.0) + max(0.0, exclusive[a])

    def add_ops(self) -> None:
        ctx = self.ctx
        ops, nest = ctx.trace.ops, ctx.nest
        for i, op in enumerate(ops):
            if ctx.step_of_op[i] < 0:
                continue
            marker = self.enclosing_marker(nest.op_ann[i])
            if marker < 0:
                continue
            stat = self.bucket(marker).ops.setdefault(op.name, [0, 0.0, ""])
            parent = nest.op_parent[i]
            if parent < 0 or ops[parent].name != op.name:
                stat[0] += 1  # aten::sum inside aten::sum is one call, not two
            stat[1] += nest.op_self[i]
            if not stat[2]:
                stat[2] = _shapes(op.args)

    def add_runtime(self) -> None:
        """Runtime calls: syncs, and the kernels and copies they launched."""
        ctx = self.ctx
        for r, call in enumerate(ctx.trace.runtime):
            if ctx.step_of_rt[r] < 0 or ctx.is_artefact(r):
                continue
            marker = self.enclosing_marker(ctx.nest.rt_ann[r])
            if marker < 0:
                continue
            entry = self.bucket(marker)
            if call.name in SYNC_CALLS or ctx.blocking[r]:
                entry.syncs += 1
                entry.sync_us += call.end - call.start
            for kind, index in ctx.links.rt_device.get(r, ()):
                entry.device_us += self._add_device(entry, kind, index)

    def _add_device(self, entry: _Acc, kind: str, index: int) -> float:
        """Count one kernel, copy or memset for ``entry``; returns its duration."""
        trace = self.ctx.trace
        if kind == "kernel":
            kernel = trace.kernels[index]
            duration = kernel.end - kernel.start
            stat_k = entry.kernels.setdefault(kernel.name, [0.0, 0.0])
            stat_k[0] += 1
            stat_k[1] += duration
            return duration
        span = trace.memcpys[index] if kind == "memcpy" else trace.memsets[index]
        duration = span.end - span.start
        size = span.args.get("bytes", 0) if isinstance(span.args, Mapping) else 0
        label = copy_kind(span.name) if kind == "memcpy" else "Memset"
        stat_c = entry.copies.setdefault(label, [0.0, 0.0, 0.0])
        stat_c[0] += 1
        stat_c[1] += size if isinstance(size, (int, float)) else 0
        stat_c[2] += duration
        return duration


def line_stats(ctx: Context) -> list[LineStats]:
    """Hot-line statistics, hottest first; empty when the trace has no line markers."""
    marker_line = [_marker_line(a.name) for a in ctx.trace.annotations]
    if not any(line is not None for line in marker_line):
        return []
    walk = _LineWalk(ctx, marker_line)
    walk.add_marker_times()
    walk.add_ops()
    walk.add_runtime()
    return _per_call(ctx, walk.acc)


def _per_call(ctx: Context, acc: dict[int, _Acc]) -> list[LineStats]:
    """The totals of each line as numbers per call of the function, hottest first."""
    n_steps = max(1, len(ctx.steps))
    # Medians across steps, not means: one step where the OS took the CPU away (shared
    # machines) would otherwise make a 15 µs line look like 40 ms.
    profiled = {
        line: [entry.cpu_by_step.get(s, 0.0) for s in range(n_steps)] for line, entry in acc.items()
    }
    profiled_typical = {line: median(steps) for line, steps in profiled.items()}
    per_line, typical, scale = _cpu_times(ctx, profiled, profiled_typical)
    total_cpu = sum(typical.values()) or 1.0
    lines: list[LineStats] = []
    for line, entry in acc.items():
        per_call = per_line[line]
        lines.append(
            LineStats(
                line=line,
                share=typical[line] / total_cpu,
                cpu_us=typical[line] * scale,
                device_us=entry.device_us / n_steps,
                hits=entry.hits / n_steps,
                cpu_us_min=min(per_call) * scale,
                cpu_us_median=median(per_call) * scale,
                cpu_us_max=max(per_call) * scale,
                profiled_cpu_us=profiled_typical[line],
                syncs=entry.syncs / n_steps,
                sync_us=entry.sync_us / n_steps,
                **_contents(entry, n_steps),
            )
        )
    lines.sort(key=lambda s: -s.share)
    return lines


def _cpu_times(
    ctx: Context, profiled: dict[int, list[float]], profiled_typical: dict[int, float]
) -> tuple[dict[int, list[float]], dict[int, float], float]:
    """Each line's CPU times per call, their median, and the factor that turns them into µs
    of the unprofiled call.

    Profiled times include the profiler's own cost per recorded op and marker, which makes a
    line of a few small ops look several times slower than one long op. When the worker timed
    the lines without the profiler (``Measurements.line_us``), those times are used; else the
    profiled ones. When it timed the call, the lines share out that time in proportion."""
    m = ctx.measurements
    per_line = profiled
    if m is not None and m.line_us:
        per_line = {line: list(m.line_us.get(line, ())) or [0.0] for line in profiled}
    typical = {line: median(times) for line, times in per_line.items()}
    if per_line is profiled:
        typical = profiled_typical
    scale = 1.0
    if m is not None and m.call_us:
        scale = median(m.call_us) / (sum(typical.values()) or 1.0)
    return per_line, typical, scale


def _contents(entry: _Acc, n_steps: int) -> dict[str, Any]:
    """A line's ops, kernels and copies per call (ops and kernels hottest first)."""
    return {
        "ops": sorted(
            (LineOp(n, c / n_steps, t / n_steps, s) for n, (c, t, s) in entry.ops.items()),
            key=lambda o: -o.self_cpu_us,
        ),
        "kernels": sorted(
            (LineKernel(n, c / n_steps, t / n_steps) for n, (c, t) in entry.kernels.items()),
            key=lambda k: -k.device_us,
        ),
        "copies": [
            LineCopy(kind, c / n_steps, b / n_steps, t / n_steps)
            for kind, (c, b, t) in entry.copies.items()
        ],
    }
