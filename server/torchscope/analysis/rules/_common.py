"""Small helpers several rules share: per-step medians, grouping, source lookup, and the
columns several rules read (names, runtime call kinds, gap lengths, step slices), built once
per trace and cached on the context."""

from __future__ import annotations

from array import array
from collections.abc import Callable, Iterable, Sequence
from functools import reduce
from itertools import compress, groupby, repeat
from operator import add, eq, itemgetter, sub
from typing import Any, TypeVar

from ...ingest import Span
from ..index.columns import ByName, median
from ..index.context import Context
from ..index.intervals import Timeline
from ..index.link import SYNC_CALLS, is_launch
from ..measure.stages import Metrics

T = TypeVar("T")


def per_step_median(ctx: Context, pairs: Iterable[tuple[int, float]]) -> float:
    """Median over all steps of the per-step sums of ``(step, value)`` pairs (steps with
    nothing count as 0, so a cost seen in one step of five is not reported as typical)."""
    totals = [0.0] * len(ctx.steps)
    for k, v in pairs:
        if 0 <= k < len(totals):
            totals[k] += v
    return median(totals)


def per_step_mean(ctx: Context, total: float) -> float:
    """A total over the analysed steps, spread over them."""
    return total / max(1, len(ctx.steps))


def rt_location(ctx: Context, r: int) -> tuple[str | None, int | None]:
    """Source file and line of runtime call ``r`` (None, None when unknown, at once when
    the trace has no source information: rules ask for thousands of calls)."""
    if not ctx.sources.available:
        return None, None
    return ctx.sources.of_runtime(r)


def op_location(ctx: Context, i: int) -> tuple[str | None, int | None]:
    """Source file and line of op ``i`` (None, None at once without source information)."""
    if not ctx.sources.available:
        return None, None
    return ctx.sources.of_op(i)


def top_op_of_rt(ctx: Context, r: int) -> int:
    """The outermost op enclosing runtime call ``r`` (what the user's code called)."""
    i = ctx.nest.rt_op[r]
    parent = ctx.nest.op_parent
    hops = 0
    while i >= 0 and parent[i] >= 0 and hops < 512:
        i = parent[i]
        hops += 1
    return i


def top_op_of_op(ctx: Context, i: int) -> int:
    """The outermost op enclosing op ``i`` (itself when top-level)."""
    parent = ctx.nest.op_parent
    hops = 0
    while i >= 0 and parent[i] >= 0 and hops < 512:
        i = parent[i]
        hops += 1
    return i


def count_per_step(count: int, ctx: Context) -> str:
    """A per-step count for messages: ``3``, ``1.5``, ``1429``."""
    value = count / max(1, len(ctx.steps))
    return f"{value:.0f}" if value >= 10 or value == int(value) else f"{value:.1f}"


# -- Columns cached on the context -------------------------------------------------------
# Several rules need the same per-span column (names) or the same step slices; each is built
# once per trace and kept by ``ctx.memo`` under a ``rules.``-prefixed key.

_NAME = itemgetter(2)
_LO = itemgetter(1)


OCCUPANCY_QUERY = "cudaOccupancyMaxActiveBlocksPerMultiprocessor"
"""The occupancy query cuBLAS/cuDNN make before an adaptive launch (heavy-kernel)."""

RT_OTHER, RT_LAUNCH, RT_GRAPH_LAUNCH, RT_QUERY, RT_SYNC = range(5)
"""What a runtime call is, for the rules that look for a kind of call: a launch of one
kernel, ``cudaGraphLaunch``, an occupancy query, a synchronising call, anything else."""


def _runtime_kind(name: str) -> int:
    if is_launch(name):
        return RT_GRAPH_LAUNCH if name == "cudaGraphLaunch" else RT_LAUNCH
    if name.startswith(OCCUPANCY_QUERY):
        return RT_QUERY
    return RT_SYNC if name in SYNC_CALLS else RT_OTHER


def runtime_kinds(ctx: Context) -> bytearray:
    """Per runtime call, its ``RT_*`` kind (built once, one name test per distinct name).
    Reading a name means touching its event; sync, small-kernels and heavy-kernel all
    classify calls, and read this small-int column instead (a byte a call)."""
    runtime = ctx.trace.runtime
    return ctx.memo(
        (id(runtime), "rules.kinds"),
        lambda: bytearray(map(ByName(_runtime_kind).__getitem__, map(_NAME, runtime))),
    )


def gap_lengths(ctx: Context, timeline: Timeline) -> array[float]:
    """``starts[j + 1] - ends[j]`` of one of the context's timelines: the idle gap after
    each busy stretch (built once; gpu-idle and launch-delay both look for long ones)."""
    return ctx.memo(
        (id(timeline), "rules.gaps"),
        lambda: array("d", map(sub, timeline.starts[1:], timeline.ends)),
    )


def names(ctx: Context, spans: list[Span]) -> list[str]:
    """Names of one of the trace's span lists (built once per list)."""
    return ctx.memo((id(spans), "rules.names"), lambda: list(map(_NAME, spans)))


def distinct_names(ctx: Context, spans: list[Span]) -> set[str]:
    """The distinct names in one of the trace's span lists (built once per list): a rule
    tests a name property once per name, not once per span."""
    return ctx.memo((id(spans), "rules.distinct"), lambda: set(names(ctx, spans)))


def positions(
    values: Sequence[Any], value: object, lo: int = 0, hi: int | None = None
) -> list[int]:
    """Indices ``i`` in ``[lo, hi)`` with ``values[i] == value``, in order: one pass in C
    (``compress`` over ``map(eq, …)``; ``array.index`` takes no start before Python 3.10)."""
    stop = len(values) if hi is None else hi
    return list(compress(range(lo, stop), map(eq, values[lo:stop], repeat(value))))


def indices_named(ctx: Context, spans: list[Span], wanted: Iterable[str]) -> list[int]:
    """Indices of the spans named one of ``wanted``, in order (for rare names: one C scan
    of the name column per name present, see :func:`positions`)."""
    column = names(ctx, spans)
    found: list[int] = []
    for name in distinct_names(ctx, spans).intersection(wanted):
        found.extend(positions(column, name))
    found.sort()
    return found


def step_slices(
    ctx: Context, spans: list[Span], step_of: Sequence[int]
) -> list[tuple[int, int, int]]:
    """``(step, lo, hi)``: the spans of one of the trace's lists that lie in a step, as
    slices in index order, such that ``step_of[i] == step`` for every ``i`` in ``[lo, hi)``.

    ``step_of`` is the matching ``ctx.step_of_*`` list. The step ranges of the context are
    used when they agree with it (steps do not overlap: the usual case, checked in C);
    otherwise the slices are the runs of equal values in ``step_of``."""
    return ctx.memo((id(spans), "rules.step_slices"), lambda: _step_slices(ctx, spans, step_of))


def _step_slices(
    ctx: Context, spans: list[Span], step_of: Sequence[int]
) -> list[tuple[int, int, int]]:
    if ctx.ranges_hold_steps(spans, step_of):
        found = [(k, lo, hi) for k, (lo, hi) in enumerate(ctx.ranges(spans)) if hi > lo]
        found.sort(key=_LO)
        return found
    found = []
    lo = 0
    for k, run in groupby(step_of):
        hi = lo + sum(1 for _ in run)
        if k >= 0:
            found.append((k, lo, hi))
        lo = hi
    return found


def picker(indices: Sequence[int]) -> Callable[[Sequence[T]], Sequence[T]]:
    """A function giving ``values[i]`` for each index, fetched in C (``itemgetter`` of many
    indices; of one it returns the bare value, so that case is wrapped). Build it once to
    read the same indices from several columns."""
    if len(indices) == 1:
        only = indices[0]
        return lambda values: [values[only]]
    if not indices:
        return lambda values: []
    return itemgetter(*indices)


def add_per_step(totals: list[float], k: int, values: Iterable[float]) -> None:
    """``totals[k] += v`` for each value in order, in C. (``reduce`` adds left to right on
    every Python; ``sum`` of floats compensates rounding from 3.12 on, so its last digit
    could differ from the loop's.)"""
    totals[k] = reduce(add, values, totals[k])


def without_cuda_memory(measured: Metrics) -> str | None:
    """The skip reason of the rules over CUDA ``[memory]`` events, or None when there are some."""
    analysis = measured.memory
    if analysis is None or "cuda" not in analysis.peaks:
        return "no CUDA memory events (profile on CUDA with --memory)"
    return None
