"""Per-step numbers and the op table, computed from a :class:`Context`.

Steps are time windows; everything that *starts* inside a window belongs to that step, and
device busy time is the union of device intervals clipped to the window (what a reader sees
in the trace viewer between the step's edges). Across steps we report min / median / max,
never a mean alone: one slow step (allocator growth, a recompile) drags a mean of five far
from what a typical call costs.

A 200k-event trace has tens of thousands of ops, runtime calls and kernels, so per-item work
runs in C (``map``, ``compress``, slices, ``list.count``) and Python loops only visit the few
items that need a second look. Sums keep the order of the per-item loops they replace, so the
floats come out bit-identical.
"""

from __future__ import annotations

from bisect import bisect_left
from itertools import compress, groupby, repeat
from operator import add, itemgetter, le, lt, methodcaller, not_, sub
from types import MappingProxyType
from typing import Any

from ..ingest import Span
from .columns import DATALOADER, ByName, all_linked, is_comm_kernel, median, name_ids, top_level
from .context import Context, assign
from .cpu_index import CpuIndex, cpu_index
from .efficiency import annotate_ops, measure_efficiency
from .intervals import union_length
from .link import copy_kind, is_launch
from .memory import memory_analysis
from .op_table import op_table
from .results import Gap, StepMetrics
from .segment import Step
from .stages import Metrics

_START = itemgetter(0)
_END = itemgetter(1)
_NAME = itemgetter(2)
_TRACK = itemgetter(3)
_ARGS = itemgetter(4)
_INTERVAL = itemgetter(0, 1)
_GET_BYTES = methodcaller("get", "bytes", 0)

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


def _launched_device_time(ctx: Context) -> list[float]:
    """Per step, the union of device intervals launched by the step's own calls, wherever
    on the device timeline they ran. Without a sync per step the CPU runs ahead and a step's
    window shows the device busy with earlier steps' work; this is the device time per call.

    A step's spans of one kind are runs of consecutive spans with the same launch step (a
    handful per step: the CPU launches in order), copied out as slices. Each kind is sorted by
    start, so a step with spans of one kind needs no sort; otherwise a stable sort by start
    gives the order a stable sort of (start, end) pairs would."""
    trace, links = ctx.trace, ctx.links
    n_steps = len(ctx.steps)
    members: list[list[Span]] = [[] for _ in range(n_steps)]
    kinds = [0] * n_steps  # how many kinds each step has spans of
    primary = ctx.primary_device
    on_primary = {i for i, t in enumerate(trace.tracks) if primary == t.device}
    step_of_rt = [*ctx.step_of_rt, -1]  # index -1 (not linked) reads the sentinel
    for spans, rts, issued, fallback in (
        (trace.kernels, links.kernel_rt, links.kernel_issued, ctx.step_of_kernel),
        (trace.memcpys, links.memcpy_rt, links.memcpy_issued, ctx.step_of_memcpy),
        (trace.memsets, links.memset_rt, links.memset_issued, ctx.step_of_memset),
    ):
        if not spans or primary is None:
            continue
        launch_step = list(map(step_of_rt.__getitem__, rts))
        if not all_linked(ctx, rts):
            unlinked = list(compress(range(len(rts)), map(lt, rts, repeat(0))))
            by_op = [i for i in unlinked if issued[i] == issued[i]]  # linked by External id
            if by_op:
                for i, k in zip(by_op, assign(ctx.steps, [issued[i] for i in by_op])):
                    launch_step[i] = k
            for i in unlinked:
                if issued[i] != issued[i]:  # not linked at all: go by where it ran
                    launch_step[i] = fallback[i]
        if not on_primary.issuperset(map(_TRACK, spans)):  # other devices: in no step
            elsewhere = map(not_, map(on_primary.__contains__, map(_TRACK, spans)))
            for i in compress(range(len(spans)), elsewhere):
                launch_step[i] = -1
        seen = [False] * n_steps
        lo = 0
        for k, run in groupby(launch_step):
            hi = lo + len(list(run))
            if k >= 0:
                members[k] += spans[lo:hi]
                seen[k] = True
            lo = hi
        kinds = list(map(add, kinds, seen))
    out: list[float] = []
    for step_spans, n in zip(members, kinds):
        if n > 1:
            step_spans.sort(key=_START)
        out.append(union_length(map(_INTERVAL, step_spans)))
    return out


def _launch_delays(ctx: Context) -> list[list[float]]:
    """Per step, launch call start → kernel start for every linked kernel in the step."""
    out: list[list[float]] = [[] for _ in ctx.steps]
    kernels, runtime = ctx.trace.kernels, ctx.trace.runtime
    rts = ctx.links.kernel_rt
    if not ctx.ranges_hold_steps(kernels, ctx.step_of_kernel):  # overlapping steps
        for kernel, r, step in zip(kernels, rts, ctx.step_of_kernel):
            if r >= 0 and step >= 0:
                out[step].append(kernel.start - runtime[r].start)
        return out
    slices = ctx.ranges(kernels)
    k_starts, r_starts = ctx.starts(kernels), ctx.starts(runtime)
    aligned = True
    every_linked = all_linked(ctx, rts)
    for (lo, hi), delays in zip(slices, out):
        launched = rts[lo:hi]
        if every_linked or hi == lo or min(launched) >= 0:  # all linked, the usual case
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
    if aligned:  # one delay per kernel of each step's slice: the kernel table reuses them
        ctx._columns[(id(kernels), "metrics.delays")] = out
    return out


def _slices(values: list[float], ranges: list[tuple[int, int]]) -> list[float]:
    return [float(sum(values[lo:hi])) for lo, hi in ranges]


def _copy_bytes(memcpys: list[Span], ranges: list[tuple[int, int]]) -> list[dict[str, int]]:
    """Per step, bytes copied by direction (``HtoD``…), in first-seen order; a ``bytes``
    that is not an integer counts 0."""
    kind_of = ByName(copy_kind)
    out: list[dict[str, int]] = []
    for lo, hi in ranges:
        chunk = memcpys[lo:hi]
        kinds = list(map(kind_of.__getitem__, map(_NAME, chunk)))
        sizes = list(map(_GET_BYTES, map(_ARGS, chunk)))
        if not {int}.issuperset(map(type, sizes)):  # a float, bool, …: look at each
            sizes = [b if isinstance(b, int) and not isinstance(b, bool) else 0 for b in sizes]
        out.append({k: sum(compress(sizes, map(k.__eq__, kinds))) for k in dict.fromkeys(kinds)})
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


def _device_columns(ctx: Context) -> dict[str, list[Any]]:
    """Per step: kernel, communication kernel, memcpy and memset time, copies and bytes."""
    trace = ctx.trace
    kernels = trace.kernels
    k_ranges = ctx.ranges(kernels)
    k_dur = ctx.durations(kernels)
    k_ids, k_names = name_ids(ctx, kernels)  # top_kernels reads them too
    comm = list(map(is_comm_kernel, k_names))
    m_ranges = ctx.ranges(trace.memcpys)
    return {
        "kernel_us": _slices(k_dur, k_ranges),
        "comm_us": [
            float(sum(compress(k_dur[lo:hi], map(comm.__getitem__, k_ids[lo:hi]))))
            for lo, hi in k_ranges
        ],
        "memcpy_us": _slices(ctx.durations(trace.memcpys), m_ranges),
        "copies": [hi - lo for lo, hi in m_ranges],
        "copy_bytes": _copy_bytes(trace.memcpys, m_ranges),
        "memset_us": _slices(ctx.durations(trace.memsets), ctx.ranges(trace.memsets)),
    }


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
    dev = _device_columns(ctx)
    delays = _launch_delays(ctx)
    launched = _launched_device_time(ctx)
    timeline = ctx.timeline()
    anns = ctx.trace.annotations
    is_loader = map(str.startswith, map(_NAME, anns), repeat(DATALOADER))  # is_dataloader
    loaders = list(compress(anns, is_loader))
    out: list[StepMetrics] = []
    steps = ctx.steps
    origin = steps[0].start if steps else 0.0
    index = cpu_index(ctx)
    for k, st in enumerate(steps):
        wall = st.wall_us
        busy = timeline.busy(st.start, st.end) if timeline is not None else 0.0
        dl_us, wait_us = _input_wait(ctx, st, loaders)
        out.append(
            StepMetrics(
                name=st.name,
                wall_us=float(wall),
                cpu_op_us=cpu_op_us[k],
                ops=ops[k],
                device_busy_us=float(busy),
                device_busy_share=busy / wall if wall > 0 else 0.0,
                device_time_us=launched[k],
                kernel_us=dev["kernel_us"][k],
                memcpy_us=dev["memcpy_us"][k],
                memset_us=dev["memset_us"][k],
                comm_us=dev["comm_us"][k],
                launches=launches[k],
                launch_delay_us=median(delays[k]) if delays[k] else None,
                syncs=syncs[k],
                sync_us=sync_us[k],
                copies=dev["copies"][k],
                copy_bytes=dev["copy_bytes"][k],
                dataloader_us=dl_us,
                input_wait_us=wait_us,
                largest_gaps=_gaps(ctx, st, index),
                start_us=float(st.start - origin),
            )
        )
    return out
