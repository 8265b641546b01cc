"""``low-utilization``: the GPU is busy less than half of each step.

The TensorBoard profiler plugin's advice below 50 % GPU utilisation: give the GPU more work
per step (a larger batch) so fixed per-step CPU costs are amortised. It restates the verdict's
number as advice, so it has no cost of its own (the idle time is in the other findings).
"""

from __future__ import annotations

from ..formatting import format_duration, format_share
from ..index.columns import median
from ..index.context import Context
from ..measure.stages import Metrics
from ..results import Finding
from .base import Rule

LOW_UTILIZATION_SHARE = 0.5
"""TensorBoard profiler plugin: GPU utilisation below 50 % triggers its batch-size advice."""


class LowUtilization(Rule):
    """GPU busy under half of the step."""

    id = "low-utilization"
    title = "GPU busy less than half the step"
    severity = "information"
    source = "PyTorch TensorBoard profiler plugin (GPU utilisation < 50 % → larger batch)"

    def skip(self, ctx: Context, measured: Metrics) -> str | None:
        return (
            None if ctx.timeline() is not None and measured.steps else "no device activity recorded"
        )

    def match(self, ctx: Context, measured: Metrics) -> list[Finding]:
        share = median([s.device_busy_share for s in measured.steps])
        if share >= LOW_UTILIZATION_SHARE:
            return []
        wall = median([s.wall_us for s in measured.steps])
        return [
            self.finding(
                f"the GPU is busy {format_share(share)} of each step "
                f"({format_duration(wall * share)} of "
                f"{format_duration(wall)}): give it more work per step (a larger batch) once "
                "the causes "
                "above are fixed",
                0.0,
                busy_share=share,
            )
        ]


RULE = LowUtilization()
