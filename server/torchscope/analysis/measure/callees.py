"""Function-level totals for the user's functions that the profiled function called.

With ``with_stack=True`` the trace holds ``python_function`` events (``helpers.py(6):
scale_up``). Each frame nested under the profiled function's own frame that is not library
code is a *callee*: its time already counts for the calling line (the line markers see to
that); here it also gets a total of its own, so the editor can say on ``def scale_up`` how much
of ``fn`` it costs. Frames carry the function's def line (kineto#630), which is what we want.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from ...ingest import LINE_MARKER_PREFIX
from ..index.columns import median
from ..index.context import Context
from ..index.source import is_library, parse_frame
from .parts import CalleeStats

if TYPE_CHECKING:
    from ...ingest.model import Span
    from .parts import LineStats


def callee_stats(ctx: Context, lines: list[LineStats] | None = None) -> list[CalleeStats]:
    """Callees of the line-marked function, most expensive first; empty without stacks.

    With ``lines`` (``line_stats``), a callee's share is, per line that called it, its part of
    that line's profiled time times the line's share, so it is measured like the lines (whose
    shares come from unprofiled times when the worker measured them)."""
    trace, nest = ctx.trace, ctx.nest
    pys = trace.python
    if not pys or not ctx.steps:
        return []
    # The profiled function's frames: the nearest frame around each line marker.
    roots = {
        nest.ann_py[a]
        for a, ann in enumerate(trace.annotations)
        if ann.name.startswith(LINE_MARKER_PREFIX) and nest.ann_py[a] >= 0
    }
    if not roots:
        return []
    step_of = ctx.step_of(pys)
    n_steps = len(ctx.steps)
    root_time = sum(pys[r].end - pys[r].start for r in roots if step_of[r] >= 0) / n_steps
    totals: dict[tuple[str, int, str], list[float]] = {}
    line_weight = _line_weights(ctx, lines or [])
    # Per step, as the lines' shares are medians over steps (a mean would let one step that
    # the OS slowed down move the callee and not its line).
    weighted: dict[tuple[str, int, str], list[float]] = {}
    parent = nest.py_parent
    for i, frame in enumerate(pys):
        if i in roots or step_of[i] < 0:
            continue
        parsed = parse_frame(frame.name)
        if parsed is None or is_library(parsed[0]):
            continue
        if not _outermost_under_root(i, pys, parent, roots):
            continue
        entry = totals.setdefault(parsed, [0.0, 0.0])
        entry[0] += 1
        entry[1] += frame.end - frame.start
        steps = weighted.setdefault(parsed, [0.0] * n_steps)
        steps[step_of[i]] += (frame.end - frame.start) * line_weight(frame.start, frame.end)
    # As for lines: profiled times carry the profiler's cost (with_stack makes it large), so a
    # callee gets its share of the unprofiled time per call when that was measured.
    measured = ctx.measurements.call_us if ctx.measurements is not None else []
    per_call = median(measured) if measured else root_time
    found = []
    for (file, line, name), (count, total) in totals.items():
        share = (total / n_steps) / root_time if root_time > 0 else 0.0
        if lines:
            share = median(weighted[file, line, name])
        found.append(CalleeStats(file, line, name, count / n_steps, share * per_call, share))
    found.sort(key=lambda c: -c.cpu_us)
    return found


def _outermost_under_root(i: int, pys: list[Span], parent: Sequence[int], roots: set[int]) -> bool:
    """Frame ``i`` is under a root and the outermost frame of its function on the way up
    (recursion and callbacks count once)."""
    up = parent[i]
    while up >= 0:
        if up in roots:
            return True
        if pys[up].name == pys[i].name:
            return False
        up = parent[up]
    return False


def _line_weights(ctx: Context, lines: list[LineStats]) -> Callable[[float, float], float]:
    """``weight(start, end)``: the share per profiled µs of the innermost line marker around a
    frame (the line's share ÷ its profiled µs per call; 0 outside every marker)."""
    per_us = {s.line: s.share / s.profiled_cpu_us for s in lines if s.profiled_cpu_us > 0}
    markers = sorted(
        (a.start, a.end, int(a.name[len(LINE_MARKER_PREFIX) :]))
        for a in ctx.trace.annotations
        if a.name.startswith(LINE_MARKER_PREFIX) and a.name[len(LINE_MARKER_PREFIX) :].isdigit()
    )
    starts = [m[0] for m in markers]

    def weight(start: float, end: float) -> float:
        i = bisect_right(starts, start) - 1
        while i >= 0:  # the latest-starting marker that holds the frame is the innermost
            _, m_end, line = markers[i]
            if m_end >= end:
                return per_us.get(line, 0.0)
            i -= 1
        return 0.0

    return weight
