"""Per-step numbers and the op table, computed from a :class:`Context`.

Steps are time windows; everything that *starts* inside a window belongs to that step, and
device busy time is the union of device intervals clipped to the window (what a reader sees
in the trace viewer between the step's edges). Across steps we report min / median / max,
never a mean alone: one slow step (allocator growth, a recompile) drags a mean of five far
from what a typical call costs.
"""

from __future__ import annotations

import statistics
from bisect import bisect_right
from collections.abc import Sequence
from heapq import nlargest
from itertools import accumulate, compress
from operator import and_, itemgetter, mul, sub

from .context import Context, assign
from .intervals import Timeline
from .link import copy_kind, is_launch
from .report import Gap, KernelStat, StepMetrics, TopOp

_START = itemgetter(0)
_END = itemgetter(1)
_NAME = itemgetter(2)
_TRACK = itemgetter(3)

GAPS_PER_STEP = 5
"""Largest idle gaps kept per step for the report."""

COMM_MARKERS = (
    "nccl",
    "rccl",
    "all_reduce",
    "allreduce",
    "all_gather",
    "allgather",
    "reduce_scatter",
    "all_to_all",
    "alltoall",
    "sendrecv",
)


_COMM_CACHE: dict[str, bool] = {}


def is_comm_kernel(name: str) -> bool:
    """A collective-communication kernel (NCCL/RCCL); memoised, kernel names repeat."""
    found = _COMM_CACHE.get(name)
    if found is None:
        low = name.lower()
        found = any(m in low for m in COMM_MARKERS)
        if len(_COMM_CACHE) < 100_000:
            _COMM_CACHE[name] = found
    return found


def median(values: Sequence[float]) -> float:
    """Median, 0.0 for no values (a step with nothing in it)."""
    return float(statistics.median(values)) if values else 0.0


def is_dataloader(name: str) -> bool:
    """The annotation DataLoader iteration writes (``enumerate(DataLoader)#…__next__``)."""
    return name.startswith("enumerate(DataLoader)")


class CpuIndex:
    """Answers "what was the CPU doing at time t?" for gap labels in O(log n)."""

    LOOKBACK = 64
    """Top-level ops scanned backwards from t (threads interleave, so the op covering t is
    among the last few that started before it)."""

    def __init__(self, ctx: Context) -> None:
        anns = ctx.trace.annotations  # sorted by start
        self.ann_index = [i for i, a in enumerate(anns) if not a.name.startswith("ProfilerStep#")]
        self.annotations = [anns[i] for i in self.ann_index]
        self.ann_starts = [a.start for a in self.annotations]
        # reach[j]: the latest end among annotations 0..j, to stop scanning back early.
        self.reach = list(accumulate((a.end for a in self.annotations), max))
        ops = ctx.trace.ops  # sorted by start
        self.op_index = list(compress(range(len(ops)), map((0).__gt__, ctx.nest.op_parent)))
        self.ops = [ops[i] for i in self.op_index]
        self.op_starts = [o.start for o in self.ops]

    def at(self, t: float) -> str | None:
        """The innermost annotation (else top-level op) running at ``t``; step annotations
        are skipped: they contain everything and explain nothing."""
        found = self.locate(t)
        return found[0] if found else None

    def locate(self, t: float) -> tuple[str, str, int] | None:
        """Like :meth:`at`, with the kind (``annotation``/``op``) and index into the trace.

        Nested annotations start later than those around them, so the innermost one holding
        ``t`` is the latest-starting one that has not ended by ``t``."""
        j = bisect_right(self.ann_starts, t) - 1
        while j >= 0 and self.reach[j] > t:
            a = self.annotations[j]
            if t < a.end:
                return a.name, "annotation", self.ann_index[j]
            j -= 1
        k = bisect_right(self.op_starts, t) - 1
        stop = max(-1, k - self.LOOKBACK)
        while k > stop:
            if t < self.ops[k].end:
                return self.ops[k].name, "op", self.op_index[k]
            k -= 1
        return None

    def source(self, ctx: Context, t: float) -> tuple[str | None, int | None]:
        """Source file and line of what the CPU ran at ``t``."""
        found = self.locate(t)
        if found is None:
            return None, None
        _, kind, i = found
        return ctx.sources.of_annotation(i) if kind == "annotation" else ctx.sources.of_op(i)


def cpu_index(ctx: Context) -> CpuIndex:
    """The context's :class:`CpuIndex`, built once."""
    if not isinstance(ctx._cpu_index, CpuIndex):
        ctx._cpu_index = CpuIndex(ctx)
    return ctx._cpu_index


def _launched_device_time(ctx: Context) -> list[float]:
    """Per step, the union of device intervals launched by the step's own calls, wherever
    on the device timeline they ran. Without a sync per step the CPU runs ahead and a step's
    window shows the device busy with earlier steps' work; this is the device time per call."""
    trace, links = ctx.trace, ctx.links
    n_steps = len(ctx.steps)
    per_step: list[list[tuple[float, float]]] = [[] for _ in range(n_steps)]
    primary = ctx.primary_device
    device_of_track = [t.device for t in trace.tracks]
    step_of_rt = [*ctx.step_of_rt, -1]  # index -1 (not linked) reads the sentinel
    for spans, rts, issued, fallback in (
        (trace.kernels, links.kernel_rt, links.kernel_issued, ctx.step_of_kernel),
        (trace.memcpys, links.memcpy_rt, links.memcpy_issued, ctx.step_of_memcpy),
        (trace.memsets, links.memset_rt, links.memset_issued, ctx.step_of_memset),
    ):
        if not spans or primary is None:
            continue
        launch_step = list(map(step_of_rt.__getitem__, rts))
        unlinked = [i for i, r in enumerate(rts) if r < 0]
        if unlinked:
            by_op = [i for i in unlinked if issued[i] == issued[i]]  # linked by External id
            if by_op:
                for i, k in zip(by_op, assign(ctx.steps, [issued[i] for i in by_op])):
                    launch_step[i] = k
            for i in unlinked:
                if issued[i] != issued[i]:  # not linked at all: go by where it ran
                    launch_step[i] = fallback[i]
        on_primary = list(map(primary.__eq__, map(device_of_track.__getitem__, map(_TRACK, spans))))
        pairs = list(zip(map(_START, spans), map(_END, spans)))
        for k in range(n_steps):
            chosen = map(and_, map(k.__eq__, launch_step), on_primary)
            per_step[k].extend(compress(pairs, chosen))
    out: list[float] = []
    for intervals in per_step:
        t = Timeline(intervals)
        out.append(float(sum(map(sub, t.ends, t.starts))))
    return out


def _launch_delays(ctx: Context) -> list[list[float]]:
    """Per step, launch call start → kernel start for every linked kernel in the step."""
    out: list[list[float]] = [[] for _ in ctx.steps]
    runtime = ctx.trace.runtime
    for kernel, r, step in zip(ctx.trace.kernels, ctx.links.kernel_rt, ctx.step_of_kernel):
        if r >= 0 and step >= 0:
            out[step].append(kernel.start - runtime[r].start)
    return out


TOP_KERNELS = 10
"""Rows in the kernel table."""


def top_kernels(ctx: Context, limit: int = TOP_KERNELS) -> list[KernelStat]:
    """Kernels by median device time per step, with min / median / max across steps."""
    n = len(ctx.steps)
    if n == 0 or not ctx.trace.kernels:
        return []
    per = ctx.kernel_table()
    ranked = sorted(per, key=lambda k: -median(per[k]))[:limit]
    wanted = set(ranked)
    count = dict.fromkeys(ranked, 0)
    delays: dict[str, list[float]] = {name: [] for name in ranked}
    runtime = ctx.trace.runtime
    kernels = ctx.trace.kernels
    rts = ctx.links.kernel_rt
    for lo, hi in ctx.ranges(kernels):
        for i in range(lo, hi):
            name = kernels[i][2]
            if name in wanted:
                count[name] += 1
                r = rts[i]
                if r >= 0:
                    delays[name].append(kernels[i][0] - runtime[r][0])
    return [
        KernelStat(
            name=name,
            calls=count[name],
            median_us=median(per[name]),
            min_us=float(min(per[name])),
            max_us=float(max(per[name])),
            launch_delay_us=median(delays[name]) if delays[name] else None,
        )
        for name in ranked
    ]


def _slices(values: list[float], ranges: list[tuple[int, int]]) -> list[float]:
    return [float(sum(values[lo:hi])) for lo, hi in ranges]


def step_metrics(ctx: Context) -> list[StepMetrics]:
    """One :class:`StepMetrics` per step. Every list is sorted by start, so a step's members
    are one slice and most sums below run in C over slices."""
    trace = ctx.trace
    steps = ctx.steps
    op_ranges = ctx.ranges(trace.ops)
    top = list(map((0).__gt__, ctx.nest.op_parent))  # parent < 0: a top-level op
    top_dur = list(compress(ctx.durations(trace.ops), top)) if trace.ops else []
    top_index = list(accumulate(top, initial=0))  # top-level ops before position i
    cpu_op_us: list[float] = []
    ops: list[int] = []
    for lo, hi in op_ranges:
        first, last = top_index[lo], top_index[hi]
        ops.append(last - first)
        cpu_op_us.append(float(sum(top_dur[first:last])))

    rt_ranges = ctx.ranges(trace.runtime)
    rt_names = list(map(_NAME, trace.runtime))
    launch_flag = {name: is_launch(name) for name in set(rt_names)}
    is_launch_call = list(map(launch_flag.__getitem__, rt_names))
    counted = list(ctx.blocking)
    for r in ctx.flush:
        counted[r] = False
    rt_dur = ctx.durations(trace.runtime)
    sync_dur = list(map(mul, rt_dur, counted))
    launches = [sum(is_launch_call[lo:hi]) for lo, hi in rt_ranges]
    syncs = [sum(counted[lo:hi]) for lo, hi in rt_ranges]
    sync_us = _slices(sync_dur, rt_ranges)

    k_ranges = ctx.ranges(trace.kernels)
    k_dur = ctx.durations(trace.kernels)
    k_names = list(map(_NAME, trace.kernels))
    comm_flag = {name: is_comm_kernel(name) for name in set(k_names)}
    comm_dur = list(map(mul, k_dur, map(comm_flag.__getitem__, k_names)))
    kernel_us = _slices(k_dur, k_ranges)
    comm_us = _slices(comm_dur, k_ranges)

    m_ranges = ctx.ranges(trace.memcpys)
    memcpy_us = _slices(ctx.durations(trace.memcpys), m_ranges)
    copies = [hi - lo for lo, hi in m_ranges]
    copy_bytes: list[dict[str, int]] = []
    for lo, hi in m_ranges:
        by_kind: dict[str, int] = {}
        for s in trace.memcpys[lo:hi]:
            kind = copy_kind(s.name)
            b = s.args.get("bytes", 0)
            by_kind[kind] = by_kind.get(kind, 0) + (
                b if isinstance(b, int) and not isinstance(b, bool) else 0
            )
        copy_bytes.append(by_kind)
    memset_us = _slices(ctx.durations(trace.memsets), ctx.ranges(trace.memsets))

    delays = _launch_delays(ctx)
    launched = _launched_device_time(ctx)
    timeline = ctx.timeline()
    loaders = [a for a in trace.annotations if is_dataloader(a.name)]
    out: list[StepMetrics] = []
    origin = steps[0].start if steps else 0.0
    index = cpu_index(ctx)
    for k, st in enumerate(steps):
        wall = st.wall_us
        busy = timeline.busy(st.start, st.end) if timeline is not None else 0.0
        dl_us = 0.0
        wait_us = 0.0
        for a in loaders:
            w0, w1 = max(a.start, st.start), min(a.end, st.end)
            if w1 > w0:
                dl_us += w1 - w0
                if timeline is not None:
                    wait_us += (w1 - w0) - timeline.busy(w0, w1)
        gaps: list[Gap] = []
        if timeline is not None:
            all_gaps = timeline.gaps(st.start, st.end)
            lengths = [g1 - g0 for g0, g1 in all_gaps]
            largest = nlargest(GAPS_PER_STEP, range(len(all_gaps)), key=lengths.__getitem__)
            raw = [all_gaps[i] for i in largest]
            for g0, g1 in raw:
                gaps.append(
                    Gap(
                        start_us=float(g0 - st.start),
                        dur_us=float(g1 - g0),
                        device=ctx.primary_device if ctx.primary_device is not None else 0,
                        under=index.at((g0 + g1) / 2),
                    )
                )
        out.append(
            StepMetrics(
                name=st.name,
                wall_us=float(wall),
                cpu_op_us=cpu_op_us[k],
                ops=ops[k],
                device_busy_us=float(busy),
                device_busy_share=busy / wall if wall > 0 else 0.0,
                device_time_us=launched[k],
                kernel_us=kernel_us[k],
                memcpy_us=memcpy_us[k],
                memset_us=memset_us[k],
                comm_us=comm_us[k],
                launches=launches[k],
                launch_delay_us=median(delays[k]) if delays[k] else None,
                syncs=syncs[k],
                sync_us=sync_us[k],
                copies=copies[k],
                copy_bytes=copy_bytes[k],
                dataloader_us=dl_us,
                input_wait_us=wait_us,
                largest_gaps=gaps,
                start_us=float(st.start - origin),
            )
        )
    return out


TOP_OPS = 10
"""Rows in the op table."""


def top_ops(ctx: Context, limit: int = TOP_OPS) -> list[TopOp]:
    """Ops aggregated by name over the analysed steps, per step; device time goes to the
    innermost op whose runtime call launched the work."""
    trace = ctx.trace
    n_steps = max(1, len(ctx.steps))
    by_name = ctx.ops_by_name()
    op_self = ctx.nest.op_self
    durs = ctx.durations(trace.ops)
    calls = {name: len(idx) for name, idx in by_name.items()}
    self_us = {name: float(sum(map(op_self.__getitem__, idx))) for name, idx in by_name.items()}
    incl_us = {name: float(sum(map(durs.__getitem__, idx))) for name, idx in by_name.items()}
    dev_us: dict[str, float] = {}
    rt_op = ctx.nest.rt_op
    all_ops = trace.ops
    for spans, rts, where in (
        (trace.kernels, ctx.links.kernel_rt, ctx.step_of_kernel),
        (trace.memcpys, ctx.links.memcpy_rt, ctx.step_of_memcpy),
        (trace.memsets, ctx.links.memset_rt, ctx.step_of_memset),
    ):
        for dur, r, step in zip(ctx.durations(spans), rts, where):
            if r < 0 or step < 0:
                continue
            op = rt_op[r]
            if op < 0:
                continue
            name = all_ops[op][2]
            dev_us[name] = dev_us.get(name, 0.0) + dur
    ctx.op_calls = calls
    if ctx.device_run:
        order = sorted(calls, key=lambda k: (-dev_us.get(k, 0.0), -self_us[k]))
    else:
        order = sorted(calls, key=lambda k: -self_us[k])
    return [
        TopOp(
            name=name,
            calls=calls[name],
            self_cpu_us=self_us[name] / n_steps,
            device_us=dev_us.get(name, 0.0) / n_steps,
            cpu_us=incl_us[name] / n_steps,
        )
        for name in order[:limit]
    ]
