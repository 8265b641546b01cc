"""Per-step numbers and the op table, computed from a :class:`Context`.

Steps are CPU time windows: CPU work (ops, runtime calls, DataLoader waits, idle gaps) that
*starts* inside a window belongs to that step. Device work (kernels, copies, memsets) belongs
to the step whose call launched it, and the busy share is its union over the step's span, from
its CPU start (or the previous step's device end) to the end of its last device activity
(:mod:`.launch`). Across steps we report
min / median / max, never a mean alone: one slow step (allocator growth, a recompile) drags a
mean of five far from what a typical call costs.

A 200k-event trace has tens of thousands of ops, runtime calls and kernels, so per-item work
runs in C (``map``, ``compress``, slices, ``list.count``) and Python loops only visit the few
items that need a second look. Sums keep the order of the per-item loops they replace, so the
floats come out bit-identical.
"""

from __future__ import annotations

from array import array
from bisect import bisect_left
from itertools import compress, repeat
from operator import itemgetter, le, sub
from types import MappingProxyType

from ...ingest import Span
from ..index.columns import DATALOADER, ByName, all_linked, median, top_level
from ..index.context import Context
from ..index.cpu_index import CpuIndex, cpu_index
from ..index.link import is_launch
from ..index.segment import Step
from ..results import Gap, StepMetrics
from .efficiency import annotate_ops, measure_efficiency
from .launch import launch_runs, launched_work, step_spans
from .memory import memory_analysis
from .op_table import op_table
from .stages import Metrics

_START = itemgetter(0)
_END = itemgetter(1)
_NAME = itemgetter(2)

GAPS_PER_STEP = 5
"""Largest idle gaps kept per step for the report."""


def measure(ctx: Context) -> Metrics:
    """The metrics stage: per-step numbers, the op table and per-name call counts."""
    rows, calls = op_table(ctx)
    efficiency = measure_efficiency(ctx)
    return Metrics(
        steps=tuple(step_metrics(ctx)),
        top_ops=tuple(annotate_ops(ctx, efficiency, rows)),
        op_calls=MappingProxyType(calls),
        efficiency=efficiency,
        memory=memory_analysis(ctx),
    )


def _launch_delays(ctx: Context) -> list[array[float]]:
    """Per step, launch call start → kernel start for every linked kernel the step launched
    (in kernel order, over the step's :func:`~.launch.launch_runs`)."""
    out: list[array[float]] = [array("d") for _ in ctx.steps]
    kernels = ctx.trace.kernels
    rts = ctx.links.kernel_rt
    k_starts, r_starts = ctx.starts(kernels), ctx.starts(ctx.trace.runtime)
    aligned = True
    every_linked = all_linked(ctx, rts)
    for runs, delays in zip(launch_runs(ctx, kernels, "kernel"), out):
        for lo, hi in runs:
            launched = rts[lo:hi]
            if every_linked or min(launched) >= 0:  # all linked, the usual case
                delays.extend(map(sub, k_starts[lo:hi], map(r_starts.__getitem__, launched)))
                continue
            aligned = False
            linked = list(map(le, repeat(0, hi - lo), launched))
            delays.extend(
                map(
                    sub,
                    compress(k_starts[lo:hi], linked),
                    map(r_starts.__getitem__, compress(launched, linked)),
                )
            )
    if aligned:  # one delay per kernel each step launched: the kernel table reuses them
        ctx.memo((id(kernels), "metrics.delays"), lambda: out)
    return out


def _cpu_columns(ctx: Context) -> tuple[list[int], list[float]]:
    """Per step: top-level ops, and their summed duration."""
    trace = ctx.trace
    tops = top_level(ctx)
    op_dur = ctx.durations(trace.ops)
    cpu_op_us: list[float] = []
    ops: list[int] = []
    for lo, hi in ctx.ranges(trace.ops):
        first = bisect_left(tops, lo)
        last = bisect_left(tops, hi, first)
        ops.append(last - first)
        cpu_op_us.append(float(sum(map(op_dur.__getitem__, tops[first:last]))))
    return ops, cpu_op_us


def _runtime_columns(ctx: Context) -> tuple[list[int], list[int], list[float]]:
    """Per step: launch calls, blocking calls (flushes aside), and the time they blocked."""
    runtime = ctx.trace.runtime
    rt_ranges = ctx.ranges(runtime)
    is_launch_call = list(map(ByName(is_launch).__getitem__, map(_NAME, runtime)))
    launches = [sum(is_launch_call[lo:hi]) for lo, hi in rt_ranges]
    # Blocking calls are few: sum their durations only (the others would add zeros).
    flush = ctx.flush
    counted = [r for r in compress(range(len(ctx.blocking)), ctx.blocking) if r not in flush]
    syncs: list[int] = []
    sync_us: list[float] = []
    for lo, hi in rt_ranges:
        first = bisect_left(counted, lo)
        last = bisect_left(counted, hi, first)
        syncs.append(last - first)
        chosen = [runtime[r] for r in counted[first:last]]
        sync_us.append(float(sum(map(sub, map(_END, chosen), map(_START, chosen)))))
    return launches, syncs, sync_us


def _input_wait(ctx: Context, st: Step, loaders: list[Span]) -> tuple[float, float]:
    """Time of a step under DataLoader annotations, and the part of it the device idled."""
    timeline = ctx.timeline()
    dl_us = wait_us = 0.0
    for a in loaders:
        w0, w1 = max(a.start, st.start), min(a.end, st.end)
        if w1 > w0:
            dl_us += w1 - w0
            if timeline is not None:
                wait_us += (w1 - w0) - timeline.busy(w0, w1)
    return dl_us, wait_us


def _gaps(ctx: Context, st: Step, index: CpuIndex) -> list[Gap]:
    """The step's largest device idle gaps, each with the code the CPU was in meanwhile."""
    timeline = ctx.timeline()
    if timeline is None:
        return []
    device = ctx.primary_device if ctx.primary_device is not None else 0
    return [
        Gap(
            start_us=float(g0 - st.start),
            dur_us=float(g1 - g0),
            device=device,
            under=index.at((g0 + g1) / 2),
        )
        for g0, g1 in timeline.largest_gaps(st.start, st.end, GAPS_PER_STEP)
    ]


def step_metrics(ctx: Context) -> list[StepMetrics]:
    """One :class:`StepMetrics` per step. Every list is sorted by start, so a step's members
    are one slice and most sums below run in C over slices."""
    ops, cpu_op_us = _cpu_columns(ctx)
    launches, syncs, sync_us = _runtime_columns(ctx)
    dev = launched_work(ctx)
    spans = step_spans(ctx, dev)
    delays = _launch_delays(ctx)
    anns = ctx.trace.annotations
    is_loader = map(str.startswith, map(_NAME, anns), repeat(DATALOADER))  # is_dataloader
    loaders = list(compress(anns, is_loader))
    out: list[StepMetrics] = []
    steps = ctx.steps
    origin = steps[0].start if steps else 0.0
    index = cpu_index(ctx)
    for k, st in enumerate(steps):
        wall = st.wall_us
        span = spans[k][1] - spans[k][0]
        busy = dev.union_us[k]
        dl_us, wait_us = _input_wait(ctx, st, loaders)
        out.append(
            StepMetrics(
                name=st.name,
                wall_us=float(wall),
                cpu_op_us=cpu_op_us[k],
                ops=ops[k],
                device_busy_us=busy,
                device_busy_share=min(1.0, busy / span) if span > 0 else 0.0,
                device_time_us=busy,
                kernel_us=dev.kernel_us[k],
                memcpy_us=dev.memcpy_us[k],
                memset_us=dev.memset_us[k],
                comm_us=dev.comm_us[k],
                launches=launches[k],
                launch_delay_us=median(delays[k]) if delays[k] else None,
                syncs=syncs[k],
                sync_us=sync_us[k],
                copies=dev.copies[k],
                copy_bytes=dev.copy_bytes[k],
                dataloader_us=dl_us,
                input_wait_us=wait_us,
                largest_gaps=_gaps(ctx, st, index),
                start_us=float(st.start - origin),
                span_us=float(span),
            )
        )
    return out
