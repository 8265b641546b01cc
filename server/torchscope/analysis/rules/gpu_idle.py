"""``gpu-idle``: large device gaps inside a step that no other finding explains.

Gaps under DataLoader ``__next__`` belong to ``dataloader``, gaps while the CPU is blocked in
a synchronising call to ``sync``/``pageable-copy``, gaps under profiler overhead events
(``Activity Buffer Request``) to ``profiler-buffer``; what is left is the device waiting for the
CPU to do something else: Python work, host-side preprocessing, logging. When the largest gap
opens its step (no device work from the step's start), the finding names the Python functions
(``python_function`` events, recorded with ``with_stack=True``) that occupied it; a trace with
none there (torch 1.8-1.9 ``with_stack`` wrote a ``Call stack`` arg on each op instead) names
the innermost user frames of the ops that ran in it.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from itertools import compress, repeat
from operator import itemgetter, le
from typing import Any

from ..formatting import format_duration, format_share
from ..index.columns import is_dataloader, median
from ..index.context import Context
from ..index.cpu_index import cpu_index
from ..index.intervals import Timeline, union_length
from ..index.source import user_frame
from ..measure.stages import Metrics
from ..results import Finding, StepMetrics
from ._common import distinct_names, gap_lengths
from .base import Rule

GPU_IDLE_MIN_GAP_SHARE = 0.05
"""A gap counts when it is ≥ 5 % of its step…"""

GPU_IDLE_MIN_GAP_US = 50.0
"""…and ≥ 50 µs (shorter gaps are launch latency, see small-kernels)."""

EXPLAINED_SHARE = 0.5
"""A gap at least half covered by DataLoader or a blocking call is explained elsewhere."""

OPENING_FUNCTIONS = 3
"""Python functions named for a step that opens with a long stretch of no device work."""

_START = itemgetter(0)
_END = itemgetter(1)


def opening_functions(ctx: Context, k: int, a: float, b: float) -> list[tuple[str, float]]:
    """The Python functions (``python_function`` events) that occupied ``[a, b]``, a stretch
    that opens step ``k`` with no device work: by time inside it, the most first, leaving out
    frames that enclose the whole step (the training loop, ``<module>``)."""
    step = ctx.steps[k]
    parts: dict[str, list[tuple[float, float]]] = {}
    for p in ctx.trace.python:
        if p.end <= a or p.start >= b or (p.start <= step.start and p.end >= step.end):
            continue
        parts.setdefault(p.name, []).append((max(p.start, a), min(p.end, b)))
    return _ranked(parts)


def opening_frames(ctx: Context, a: float, b: float) -> list[tuple[str, float]]:
    """For a trace without ``python_function`` events in ``[a, b]``: the innermost user frame
    of the ``Call stack`` of each op that ran there, by its ops' time inside, the most first.
    Only ops carry these stacks, so Python between ops is not counted."""
    ops = ctx.trace.ops
    parts: dict[str, list[tuple[float, float]]] = {}
    # ops enclosing ``a`` may start long before it: scan every op that starts before ``b``
    for op in ops[: bisect_left(ctx.starts(ops), b)]:
        if op.end <= a:
            continue
        found = user_frame(op.args)
        if found is not None:
            parts.setdefault(found[0], []).append((max(op.start, a), min(op.end, b)))
    return _ranked(parts)


def _ranked(parts: dict[str, list[tuple[float, float]]]) -> list[tuple[str, float]]:
    """Names by the union of their intervals, the longest first (``OPENING_FUNCTIONS``)."""
    # a recursive frame (``_call_impl``) nests in itself: its time is the union of its calls
    time = {name: union_length(sorted(iv)) for name, iv in parts.items()}
    ranked = sorted(time.items(), key=lambda kv: -kv[1])
    return [(name, us) for name, us in ranked if us > 0][:OPENING_FUNCTIONS]


def _opening(ctx: Context, k: int, a: float, b: float) -> tuple[str, list[tuple[str, float]]]:
    """What the message says about ``[a, b]`` opening step ``k``, and the functions named."""
    functions = opening_functions(ctx, k, a, b)
    where = "in Python"
    if not functions:
        functions, where = opening_frames(ctx, a, b), "in ops called from"
    named = ", ".join(f"{n} ({format_duration(us)})" for n, us in functions)
    return f"; the step opens with it, {where}: {named}", functions


def _long_gaps(
    timeline: Timeline, lengths: Sequence[float], a: float, b: float, shortest: float
) -> list[tuple[float, float]]:
    """``timeline.gaps(a, b)`` without those shorter than ``shortest`` (> 0); ``lengths``
    are the timeline's :func:`gap_lengths`. A step holds thousands of short gaps between
    kernels, so the lengths are tested in C."""
    starts, ends = timeline.starts, timeline.ends
    i = bisect_right(ends, a)
    j = bisect_left(starts, b, i)
    if j <= i:
        return [(a, b)] if b - a >= shortest else []
    inner = lengths[i : j - 1]
    out: list[tuple[float, float]] = []
    if inner and max(inner) >= shortest:  # long gaps are rare: most steps stop here
        long = map(le, repeat(shortest), inner)
        out = list(compress(zip(ends[i : j - 1], starts[i + 1 : j]), long))
    if starts[i] > a and starts[i] - a >= shortest:
        out.insert(0, (a, starts[i]))
    if ends[j - 1] < b and b - ends[j - 1] >= shortest:
        out.append((ends[j - 1], b))
    return out


def step_spans(ctx: Context, steps: Sequence[StepMetrics]) -> list[tuple[float, float]]:
    """Each step's span (``launch.py``): from its CPU start, or the previous span's end when
    that is later, for ``span_us``. Without a sync per step the device runs behind the CPU:
    a 2.7 ms GEMM outlived the 53 µs its step's CPU side took, and the CPU window alone read
    the busy GPU as idle."""
    out: list[tuple[float, float]] = []
    previous = float("-inf")
    for step, measured in zip(ctx.steps, steps):
        start = max(step.start, previous)
        end = start + measured.span_us if measured.span_us > 0 else max(step.end, start)
        out.append((start, end))
        previous = end
    return out


def _explained(ctx: Context) -> Timeline:
    """When the CPU was in DataLoader, a blocking call, the profiler flush or profiler
    overhead: gaps under these belong to other findings."""
    trace = ctx.trace
    runtime = trace.runtime
    loaders = {n for n in distinct_names(ctx, trace.annotations) if is_dataloader(n)}
    spans = [
        *(a for a in trace.annotations if a[2] in loaders),
        *compress(runtime, ctx.blocking),
        *(runtime[i] for i in ctx.flush),
        *trace.overhead,
    ]
    return Timeline(zip(map(_START, spans), map(_END, spans)))


class GpuIdle(Rule):
    """Unexplained device idle gaps inside steps."""

    id = "gpu-idle"
    title = "GPU idle inside the step"
    source = (
        "HolisticTraceAnalysis idle time breakdown; TensorBoard profiler plugin (GPU utilisation)"
    )

    def skip(self, ctx: Context, measured: Metrics) -> str | None:
        if ctx.timeline() is None:
            return "no device activity recorded"
        return None

    def match(self, ctx: Context, measured: Metrics) -> list[Finding]:
        timeline = ctx.timeline()
        assert timeline is not None
        explained: Timeline | None = None  # built when the first long gap needs it
        index = cpu_index(ctx)
        totals = [0.0] * len(ctx.steps)
        largest: tuple[float, float, int] = (0.0, 0.0, -1)
        lengths = gap_lengths(ctx, timeline)
        spans = step_spans(ctx, measured.steps)
        for k, (a0, b0) in enumerate(spans):
            shortest = max(GPU_IDLE_MIN_GAP_US, GPU_IDLE_MIN_GAP_SHARE * (b0 - a0))
            for a, b in _long_gaps(timeline, lengths, a0, b0, shortest):
                dur = b - a
                if explained is None:
                    explained = _explained(ctx)
                if explained.busy(a, b) >= EXPLAINED_SHARE * dur:
                    continue
                totals[k] += dur
                if dur > largest[0]:
                    largest = (dur, a, k)
        cost = median(totals)
        if cost <= 0 or largest[2] < 0:
            return []
        dur, start, k = largest
        under = index.at(start + dur / 2)
        file, line = index.source(ctx, start + dur / 2)
        wall = median([b - a for a, b in spans])
        what = f" while the CPU runs {under}" if under else " while the CPU records no op"
        details: dict[str, Any] = {}  # only when there is something to name
        if start <= ctx.steps[k].start:  # the step opens with it: name the Python behind it
            said, functions = _opening(ctx, k, start, start + dur)
            if functions:
                what += said
                details["functions"] = [n for n, _ in functions]
        return [
            self.finding(
                f"the GPU sits idle {format_duration(cost)} per step "
                f"({format_share(cost / wall if wall else 0)}) "
                f"in gaps of ≥ {format_share(GPU_IDLE_MIN_GAP_SHARE)} of a step; the largest, "
                f"{format_duration(dur)} at +{format_duration(start - ctx.steps[k].start)} in "
                f"{ctx.steps[k].name}, "
                f"is{what}",
                cost,
                line=line,
                file=file,
                step=ctx.steps[k].name,
                largest_gap_us=dur,
                under=under,
                **details,
            )
        ]


RULE = GpuIdle()
