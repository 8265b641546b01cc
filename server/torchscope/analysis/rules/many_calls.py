"""``many-calls``: one op called hundreds of times per step.

Each call pays dispatch (and on GPU a launch); a loop over parameters or a Python loop over
rows shows up as one op name with a huge count. Foreach/fused variants (``torch._foreach_*``,
``fused=True`` optimizers), vectorising the loop, or ``torch.compile`` cut the count.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from itertools import repeat
from operator import lt

from ..formatting import format_duration, format_share
from ..index.columns import median
from ..index.context import Context
from ..measure.stages import Metrics
from ..results import Finding
from ._common import picker
from .base import Rule

MANY_CALLS_PER_STEP = 200
"""Calls per step above which an op counts as "many" (an optimizer step over ResNet-50's
161 parameters issues ~500 ``aten::add_`` per step in kineto's sample)."""

MANY_CALLS_MIN_SHARE = 0.05
"""…and its CPU time must be ≥ 5 % of the step to matter."""

MAX_FINDINGS = 3


SOURCE_SAMPLE = 200
"""Calls whose source line is looked up to find where most of them come from."""


def _common_location(ctx: Context, ops: Sequence[int]) -> tuple[str | None, int | None]:
    """The source line most of these calls come from (None when the trace has no sources)."""
    if not ctx.sources.available:
        return None, None
    step = max(1, len(ops) // SOURCE_SAMPLE)
    counts: dict[tuple[str | None, int | None], int] = {}
    for i in ops[::step]:
        loc = ctx.sources.of_op(i)
        if loc[1] is not None:
            counts[loc] = counts.get(loc, 0) + 1
    if not counts:
        return None, None
    return max(counts, key=lambda k: counts[k])


def _surely_below(durations: Iterable[float], n: int, limit: float) -> bool:
    """True when the median of these ``n`` durations is certainly below ``limit``.

    If at most ``n - n // 2 - 1`` of them exceed ``limit`` (lowered a hair, so that float
    rounding in ``calls × median / wall`` cannot matter), then neither does element
    ``n // 2`` of the sorted durations, which bounds the median from above. One pass in C
    instead of a sort: most frequent ops (views, ``empty``, ``add``) stop here."""
    below = limit * (1 - 1e-9)
    above: int = sum(map(lt, repeat(below), durations))
    return above <= n - n // 2 - 1


class ManyCalls(Rule):
    """Ops with a huge call count per step."""

    id = "many-calls"
    title = "One op called very many times per step"
    severity = "information"
    source = (
        "Hugging Face torch.profiler guide (the Calls column); PyTorch foreach/fused optimizers"
    )

    def skip(self, ctx: Context, measured: Metrics) -> str | None:
        return None if ctx.trace.ops and ctx.steps else "no ops inside the steps"

    def match(self, ctx: Context, measured: Metrics) -> list[Finding]:
        n = max(1, len(ctx.steps))
        wall = median([s.wall_us for s in measured.steps])
        wanted = {name for name, c in measured.op_calls.items() if c / n >= MANY_CALLS_PER_STEP}
        if not wanted:
            return []
        # Sorted: equal-cost findings must come out in the same order on every run.
        indices = {name: ctx.ops_by_name()[name] for name in sorted(wanted)}
        all_durations = ctx.durations(ctx.trace.ops)
        out: list[Finding] = []
        for name, idx in indices.items():
            per_step = len(idx) / n
            if per_step < MANY_CALLS_PER_STEP:
                continue
            durs = picker(idx)(all_durations)
            if wall > 0 and _surely_below(durs, len(durs), MANY_CALLS_MIN_SHARE * wall / per_step):
                continue
            # calls × typical call: one call blocked in a sync (an .item() inside copy_)
            # must not make the count look expensive.
            typical = median(durs)
            cpu = per_step * typical
            if wall <= 0 or cpu / wall < MANY_CALLS_MIN_SHARE:
                continue
            file, line = _common_location(ctx, indices[name])
            out.append(
                self.finding(
                    f"{name} is called {per_step:.0f} times per step (~{format_duration(cpu)} "
                    "CPU at a typical "
                    f"{format_duration(typical)} per call, "
                    f"{format_share(cpu / wall)} of the step): batch the calls (foreach/fused ops, "
                    "vectorise the loop) or compile",
                    cpu,
                    line=line,
                    file=file,
                    op=name,
                    calls_per_step=per_step,
                )
            )
        out.sort(key=lambda f: -f.cost_us)
        return out[:MAX_FINDINGS]


RULE = ManyCalls()
