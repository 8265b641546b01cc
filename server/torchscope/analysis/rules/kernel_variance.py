"""``kernel-variance``: the same kernel takes very different time from step to step.

Per kernel name we sum its device time in each step (by the step that launched it) and compare
min and max across steps (DESIGN.md §3: min / median / max, never a mean alone). A wide spread
points at clock throttling, contention with another process, data-dependent work or allocator
effects. A kernel that some step launched more often than another is other work, not variance.
"""

from __future__ import annotations

from ..formatting import format_duration
from ..index.columns import median
from ..index.context import Context
from ..measure.op_table import kernel_calls, kernel_table
from ..measure.stages import Metrics
from ..results import Finding
from .base import Rule

KERNEL_VARIANCE_SPREAD = 0.5
"""(max − min) / median ≥ 0.5 across steps: beyond the few-percent run-to-run noise of a
steady kernel."""

KERNEL_VARIANCE_MIN_US = 100.0
"""Only kernels with ≥ 100 µs per step (median): tiny kernels jitter without mattering."""

MIN_STEPS = 3
"""A spread needs at least three steps to mean anything."""

MAX_FINDINGS = 5


class KernelVariance(Rule):
    """Kernels whose per-step time varies widely across steps."""

    id = "kernel-variance"
    title = "Same kernel, very different time across steps"
    severity = "information"
    source = "DESIGN.md §3 (min/median/max across steps); HTA kernel statistics"

    def skip(self, ctx: Context, measured: Metrics) -> str | None:
        if len(ctx.steps) < MIN_STEPS:
            return f"needs at least {MIN_STEPS} steps, the trace has {len(ctx.steps)}"
        if not ctx.trace.kernels:
            return "no kernels recorded"
        return None

    def match(self, ctx: Context, measured: Metrics) -> list[Finding]:
        n = len(ctx.steps)
        per = kernel_table(ctx)
        calls = kernel_calls(ctx)
        out: list[Finding] = []
        for name, row in per.items():
            lo, hi = min(row), max(row)
            if lo <= 0:
                continue  # missing from a step: different work (another algorithm), not variance
            if min(calls[name]) != max(calls[name]):
                # launched more often in some steps: other work, not the same work slower (the
                # first step also holds kernels launched before the recording began)
                continue
            mid = median(row)
            if mid < KERNEL_VARIANCE_MIN_US or (hi - lo) / mid < KERNEL_VARIANCE_SPREAD:
                continue
            short = name if len(name) <= 80 else name[:77] + "…"
            out.append(
                self.finding(
                    f"{short}: {format_duration(lo)} to {format_duration(hi)} per step (median "
                    f"{format_duration(mid)}): check for clock throttling, other GPU users or "
                    "data-dependent work",
                    (hi - lo) / n,
                    kernel=name,
                    min_us=lo,
                    median_us=mid,
                    max_us=hi,
                )
            )
        out.sort(key=lambda f: -f.cost_us)
        return out[:MAX_FINDINGS]


RULE = KernelVariance()
