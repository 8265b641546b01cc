"""Small helpers several rules share: per-step medians, grouping, source lookup."""

from __future__ import annotations

from collections.abc import Iterable

from ..context import Context
from ..metrics import median


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
    """Source file and line of runtime call ``r`` (None, None when unknown)."""
    return ctx.sources.of_runtime(r)


def op_location(ctx: Context, i: int) -> tuple[str | None, int | None]:
    """Source file and line of op ``i``."""
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
