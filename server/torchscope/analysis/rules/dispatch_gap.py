"""``dispatch-gap``: a long stretch between an annotation's start and its first ``aten::`` op.

The guide's cheatsheet: the gap at the start of a step or of a ``record_function`` block is
Python and dispatch work before the first op reaches ATen (argument building, module hooks,
``torch.compile`` guards). The same tax as overhead-bound, zoomed in to one block.
"""

from __future__ import annotations

import math
from bisect import bisect_left

from ..formatting import format_duration, format_share
from ..index.columns import median
from ..index.context import Context
from ..index.cpu_index import cpu_index
from ..index.source import marker_line
from ..measure.stages import Metrics
from ..results import Finding
from ._common import step_slices
from .base import Rule

DISPATCH_GAP_MIN_US = 50.0
"""A gap below 50 µs is within profiler noise: the profiler itself adds ~5-20 µs at a step's
start (measured on torch 2.13 CPU traces of the guide's ``fn``)."""

DISPATCH_GAP_SHARE = 0.25
"""…and it must be at least a quarter of the block it opens to be worth reading."""

_SKIP_PREFIXES = ("enumerate(DataLoader)", "nccl:", "Optimizer.", "## ")


def _group(name: str) -> str:
    return "ProfilerStep" if name.startswith("ProfilerStep#") else name


class DispatchGap(Rule):
    """Time before the first op of a step or annotated block."""

    id = "dispatch-gap"
    title = "Long gap before the first op of a block"
    severity = "information"
    source = "Hugging Face torch.profiler guide, trace reading cheatsheet"

    def skip(self, ctx: Context, measured: Metrics) -> str | None:
        if not ctx.trace.annotations:
            return "no annotations (ProfilerStep or record_function) to measure from"
        return None

    def match(self, ctx: Context, measured: Metrics) -> list[Finding]:
        trace, nest = ctx.trace, ctx.nest
        # Top-level ops inside the steps, in time order: the CPU index of the step metrics
        # lists all top-level ops (ascending), cut here to each step's slice.
        top_level = cpu_index(ctx).op_index
        tops: list[int] = []
        for _, lo, hi in step_slices(ctx, trace.ops, ctx.step_of_op):
            cut = bisect_left(top_level, lo)
            tops.extend(top_level[cut : bisect_left(top_level, hi, cut)])
        # Ops are sorted by start, so the earliest op under an innermost annotation is the
        # first one listed; each annotation chain is then walked once, not once per op.
        inner = list(map(nest.op_ann.__getitem__, tops))
        earliest = dict(zip(reversed(inner), reversed(tops)))  # later writes: earlier ops
        starts = ctx.starts(trace.ops)
        first: dict[int, float] = {}
        for innermost in dict.fromkeys(inner):  # first-seen order, as a walk over the ops
            start = starts[earliest[innermost]]
            for a in nest.annotation_chain(innermost):
                if start < first.get(a, math.inf):
                    first[a] = start
        gaps: dict[str, list[tuple[int, float, float]]] = {}
        for a, t in first.items():
            ann = trace.annotations[a]
            if ann.name.startswith(_SKIP_PREFIXES) or ctx.step_of_ann[a] < 0:
                continue
            gaps.setdefault(_group(ann.name), []).append(
                (ctx.step_of_ann[a], t - ann.start, ann.end - ann.start)
            )
        out: list[Finding] = []
        for name, rows in gaps.items():
            gap = median([g for _, g, _ in rows])
            dur = median([d for _, _, d in rows])
            if gap < DISPATCH_GAP_MIN_US or dur <= 0 or gap / dur < DISPATCH_GAP_SHARE:
                continue
            mark = marker_line(name)
            line = mark[1] if mark else None
            file = mark[0] if mark else None
            out.append(
                self.finding(
                    f"{name} runs {format_duration(gap)} ({format_share(gap / dur)} of it) "
                    "before its first op "
                    "reaches ATen: Python and dispatch work (argument building, hooks, "
                    "guards) ahead of the math",
                    gap * len(rows) / max(1, len(ctx.steps)),
                    line=line,
                    file=file,
                    block=name,
                    gap_us=gap,
                )
            )
        return out


RULE = DispatchGap()
