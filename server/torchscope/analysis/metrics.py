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

from bisect import bisect_left, bisect_right
from collections.abc import Callable, Sequence
from itertools import accumulate, compress, groupby, repeat
from operator import add, and_, eq, itemgetter, le, lt, methodcaller, not_, sub
from types import MappingProxyType
from typing import Any, TypeVar

from .context import Context, assign
from .intervals import union_length
from .link import copy_kind, is_launch
from .model import Span
from .report import Gap, KernelStat, StepMetrics, TopOp
from .stages import Metrics

_START = itemgetter(0)
_END = itemgetter(1)
_NAME = itemgetter(2)
_TRACK = itemgetter(3)
_ARGS = itemgetter(4)
_INTERVAL = itemgetter(0, 1)
_GET_BYTES = methodcaller("get", "bytes", 0)
_T = TypeVar("_T")
_DATALOADER = "enumerate(DataLoader)"

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
    """Median, 0.0 for no values (a step with nothing in it). The same arithmetic as
    :func:`statistics.median` (sort, middle or mean of the middle two) without its overhead:
    it runs once per step and per kernel name."""
    if not values:
        return 0.0
    ordered = sorted(values)
    half = len(ordered) // 2
    if len(ordered) % 2:
        return float(ordered[half])
    return float((ordered[half - 1] + ordered[half]) / 2)


def is_dataloader(name: str) -> bool:
    """The annotation DataLoader iteration writes (``enumerate(DataLoader)#…__next__``)."""
    return name.startswith(_DATALOADER)


def _all_linked(ctx: Context, rts: list[int]) -> bool:
    """Every device span of one kind has its runtime call (the usual case); checked once."""
    key = (id(rts), "metrics.all_linked")
    found: bool | None = ctx._columns.get(key)
    if found is None:
        found = ctx._columns[key] = min(rts, default=0) >= 0
    return found


def _column(ctx: Context, spans: list[Span], name: str) -> Any:
    """A per-list column cached on the context (``None`` until stored)."""
    return ctx._columns.get((id(spans), name))


class _Ids(dict[str, int]):
    """Name → a small integer, handed out on first lookup (so ``map`` can number names in C)."""

    def __missing__(self, name: str) -> int:
        found = self[name] = len(self)
        return found


def _name_ids(ctx: Context, spans: list[Span]) -> tuple[list[int], list[str]]:
    """Per span of one of the trace's lists, a small number for its name, and the names by
    number (first seen first); built once. Later per-span tests index a list by number
    instead of hashing and comparing long kernel names again."""
    found: tuple[list[int], list[str]] | None = _column(ctx, spans, "metrics.name_ids")
    if found is None:
        ids = _Ids()
        found = (list(map(ids.__getitem__, map(_NAME, spans))), list(ids))
        ctx._columns[(id(spans), "metrics.name_ids")] = found
    return found


class ByName(dict[str, _T]):
    """Name → ``of(name)``, worked out on the first lookup of each name. A trace repeats a
    few dozen names over tens of thousands of events, so ``map(by_name.__getitem__, names)``
    classifies every event in one pass in C with one call per distinct name."""

    def __init__(self, of: Callable[[str], _T]) -> None:
        super().__init__()
        self.of = of

    def __missing__(self, name: str) -> _T:
        found = self[name] = self.of(name)
        return found


def _top_level(ctx: Context) -> list[int]:
    """Indices of the top-level ops (parent -1: no enclosing op), ascending; built once,
    shared by the step numbers and :class:`CpuIndex`."""
    ops = ctx.trace.ops
    found: list[int] | None = _column(ctx, ops, "metrics.top_level")
    if found is None:
        parent = ctx.nest.op_parent
        n_top = parent.count(-1)
        if 4 * n_top <= len(parent):  # a few dispatches, many ops under them: jump to each
            found = []
            i = -1
            for _ in range(n_top):
                i = parent.index(-1, i + 1)
                found.append(i)
        else:
            found = list(compress(range(len(parent)), map(eq, parent, repeat(-1))))
        ctx._columns[(id(ops), "metrics.top_level")] = found
    return found


class CpuIndex:
    """Answers "what was the CPU doing at time t?" for gap labels in O(log n)."""

    LOOKBACK = 64
    """Top-level ops scanned backwards from t (threads interleave, so the op covering t is
    among the last few that started before it)."""

    def __init__(self, ctx: Context) -> None:
        anns = ctx.trace.annotations  # sorted by start
        steps = map(str.startswith, map(_NAME, anns), repeat("ProfilerStep#"))
        keep = map(not_, steps)
        self.ann_index = list(compress(range(len(anns)), keep))
        self.annotations = list(map(anns.__getitem__, self.ann_index))
        self.ann_starts = list(map(_START, self.annotations))
        # reach[j]: the latest end among annotations 0..j, to stop scanning back early.
        self.reach = list(accumulate(map(_END, self.annotations), max))
        self.op_index = _top_level(ctx)  # shared, never changed
        self.op_starts = list(map(ctx.starts(ctx.trace.ops).__getitem__, self.op_index))
        self._all_ops = ctx.trace.ops  # sorted by start
        self._ops: list[Span] | None = None

    @property
    def ops(self) -> list[Span]:
        """The top-level ops (built on first use: lookups read the trace's list directly)."""
        if self._ops is None:
            self._ops = list(map(self._all_ops.__getitem__, self.op_index))
        return self._ops

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
            op = self._all_ops[self.op_index[k]]
            if t < op.end:
                return op.name, "op", self.op_index[k]
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
        if not _all_linked(ctx, rts):
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
    all_linked = _all_linked(ctx, rts)
    for (lo, hi), delays in zip(slices, out):
        launched = rts[lo:hi]
        if all_linked or hi == lo or min(launched) >= 0:  # all linked, the usual case
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


TOP_KERNELS = 10
"""Rows in the kernel table."""


def top_kernels(ctx: Context, limit: int = TOP_KERNELS) -> list[KernelStat]:
    """Kernels by median device time per step, with min / median / max across steps."""
    n = len(ctx.steps)
    kernels = ctx.trace.kernels
    if n == 0 or not kernels:
        return []
    per = ctx.kernel_table()
    medians = {name: median(row) for name, row in per.items()}
    ranked = sorted(per, key=lambda k: -medians[k])[:limit]
    row_of = {name: j for j, name in enumerate(ranked)}
    ids, names = _name_ids(ctx, kernels)
    row_of_id = [row_of.get(name, -1) for name in names]  # -1: not in the table
    count = [0] * len(ranked)
    delays: list[list[float]] = [[] for _ in ranked]
    k_starts, r_starts = ctx.starts(kernels), ctx.starts(ctx.trace.runtime)
    rts = ctx.links.kernel_rt
    # Launch delays of every kernel in each step's slice, when the step numbers found them.
    per_step: list[list[float]] | None = _column(ctx, kernels, "metrics.delays")
    for k, (lo, hi) in enumerate(ctx.ranges(kernels)):
        rows = list(map(row_of_id.__getitem__, ids[lo:hi]))
        in_table = list(map(le, repeat(0), rows))
        if per_step is not None:
            for row, value in compress(zip(rows, per_step[k]), in_table):
                count[row] += 1
                delays[row].append(value)
            continue
        for i, row in compress(zip(range(lo, hi), rows), in_table):
            count[row] += 1
            r = rts[i]
            if r >= 0:
                delays[row].append(k_starts[i] - r_starts[r])
    return [
        KernelStat(
            name=name,
            calls=count[j],
            median_us=medians[name],
            min_us=float(min(per[name])),
            max_us=float(max(per[name])),
            launch_delay_us=median(delays[j]) if delays[j] else None,
        )
        for j, name in enumerate(ranked)
    ]


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


def step_metrics(ctx: Context) -> list[StepMetrics]:
    """One :class:`StepMetrics` per step. Every list is sorted by start, so a step's members
    are one slice and most sums below run in C over slices."""
    trace = ctx.trace
    steps = ctx.steps
    tops = _top_level(ctx)
    op_dur = ctx.durations(trace.ops)
    cpu_op_us: list[float] = []
    ops: list[int] = []
    for lo, hi in ctx.ranges(trace.ops):
        first = bisect_left(tops, lo)
        last = bisect_left(tops, hi, first)
        ops.append(last - first)
        cpu_op_us.append(float(sum(map(op_dur.__getitem__, tops[first:last]))))

    runtime = trace.runtime
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

    kernels = trace.kernels
    k_ranges = ctx.ranges(kernels)
    k_dur = ctx.durations(kernels)
    kernel_us = _slices(k_dur, k_ranges)
    k_ids, k_names = _name_ids(ctx, kernels)  # top_kernels reads them too
    comm = list(map(is_comm_kernel, k_names))
    comm_us = [
        float(sum(compress(k_dur[lo:hi], map(comm.__getitem__, k_ids[lo:hi]))))
        for lo, hi in k_ranges
    ]

    m_ranges = ctx.ranges(trace.memcpys)
    memcpy_us = _slices(ctx.durations(trace.memcpys), m_ranges)
    copies = [hi - lo for lo, hi in m_ranges]
    copy_bytes = _copy_bytes(trace.memcpys, m_ranges)
    memset_us = _slices(ctx.durations(trace.memsets), ctx.ranges(trace.memsets))

    delays = _launch_delays(ctx)
    launched = _launched_device_time(ctx)
    timeline = ctx.timeline()
    anns = trace.annotations
    is_loader = map(str.startswith, map(_NAME, anns), repeat(_DATALOADER))  # is_dataloader
    loaders = list(compress(anns, is_loader))
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
            for g0, g1 in timeline.largest_gaps(st.start, st.end, GAPS_PER_STEP):
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


def measure(ctx: Context) -> Metrics:
    """The metrics stage: per-step numbers, the op table and per-name call counts."""
    rows, calls = op_table(ctx)
    return Metrics(
        steps=tuple(step_metrics(ctx)), top_ops=tuple(rows), op_calls=MappingProxyType(calls)
    )


def op_table(ctx: Context, limit: int = TOP_OPS) -> tuple[list[TopOp], dict[str, int]]:
    """Ops aggregated by name over the analysed steps, per step (device time goes to the
    innermost op whose runtime call launched the work), and every name's call count."""
    trace = ctx.trace
    n_steps = max(1, len(ctx.steps))
    by_name = ctx.ops_by_name()
    op_self = ctx.nest.op_self
    durs = ctx.durations(trace.ops)
    calls = {name: len(idx) for name, idx in by_name.items()}
    self_us: dict[str, float] = {}

    def self_of(name: str) -> float:
        """Self time of the op's calls, summed on first use: with device work it only breaks
        ties in device time, and only ties reaching the table need it."""
        found = self_us.get(name)
        if found is None:
            found = self_us[name] = float(sum(map(op_self.__getitem__, by_name[name])))
        return found

    if ctx.device_run:
        dev_us = _op_device_time(ctx)
        by_dev = sorted(calls, key=lambda k: -dev_us.get(k, 0.0))
        # Sorting by (-device, -self) is sorting by -device, then each run of equal device
        # time by -self: only the runs that reach into the table are sorted again.
        order: list[str] = []
        needed = limit if limit >= 0 else len(by_dev)  # order[:limit] below reads this many
        lo = 0
        while lo < len(by_dev) and len(order) < needed:
            dev = dev_us.get(by_dev[lo], 0.0)
            hi = lo + 1
            while hi < len(by_dev) and dev_us.get(by_dev[hi], 0.0) == dev:
                hi += 1
            order += sorted(by_dev[lo:hi], key=lambda k: -self_of(k))
            lo = hi
    else:
        dev_us = {}
        order = sorted(calls, key=lambda k: -self_of(k))
    rows = [
        TopOp(
            name=name,
            calls=calls[name],
            self_cpu_us=self_of(name) / n_steps,
            device_us=dev_us.get(name, 0.0) / n_steps,
            cpu_us=float(sum(map(durs.__getitem__, by_name[name]))) / n_steps,
        )
        for name in order[:limit]
    ]
    return rows, calls


def _op_device_time(ctx: Context) -> dict[str, float]:
    """Device time per op name: each linked device span in a step, added to the innermost op
    whose runtime call launched it, in trace order (kernels, memcpys, memsets)."""
    trace = ctx.trace
    rt_op = [*ctx.nest.rt_op, -1]  # index -1 (not linked) reads the sentinel
    all_ops = trace.ops
    ids = _Ids()
    owners: list[int] = []
    durations: list[float] = []
    for spans, rts, where in (
        (trace.kernels, ctx.links.kernel_rt, ctx.step_of_kernel),
        (trace.memcpys, ctx.links.memcpy_rt, ctx.step_of_memcpy),
        (trace.memsets, ctx.links.memset_rt, ctx.step_of_memset),
    ):
        op_of = list(map(rt_op.__getitem__, rts))
        dur = ctx.durations(spans)
        if min(op_of, default=0) < 0 or min(where, default=0) < 0:  # keep those that count
            keep = list(map(and_, map(le, repeat(0), op_of), map(le, repeat(0), where)))
            op_of = list(compress(op_of, keep))
            dur = list(compress(dur, keep))
        owners.extend(map(ids.__getitem__, map(_NAME, map(all_ops.__getitem__, op_of))))
        durations.extend(dur)
    # Per-name running sums in a list: the additions of a dict-per-span loop, in its order.
    totals = [0.0] * len(ids)
    for i, value in zip(owners, durations):
        totals[i] += value
    return dict(zip(ids, totals))
