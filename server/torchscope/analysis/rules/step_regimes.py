"""``step-regimes``: the steps run in two regimes of device busy share.

When the steps' busy shares split into two clusters at least ``REGIME_GAP`` apart (half the
steps at 99 % busy, half at 20-55 % while the DataLoader is waited on), no single number
describes a step: the verdict then uses the steady regime's totals, and this finding names
both regimes (how many steps, their busy share, which steps). Its cost is the device idle time
per step the less busy regime adds over the busier one's share, whichever is the steady one.
"""

from __future__ import annotations

from ..formatting import format_duration, format_share
from ..index.context import Context
from ..measure.stages import Metrics
from ..results import Finding, StepMetrics
from ..verdict.regimes import REGIME_GAP, find_regimes, regime_share
from .base import Rule

STEPS_NAMED = 6
"""Step names listed per regime before the rest are counted."""


def _names(steps: list[StepMetrics], side: list[int]) -> str:
    names = [steps[i].name for i in side[:STEPS_NAMED]]
    more = len(side) - len(names)
    return ", ".join(names) + (f" and {more} more" if more > 0 else "")


class StepRegimes(Rule):
    """Busy shares that split the steps into two clusters."""

    id = "step-regimes"
    title = "The steps run in two regimes"
    severity = "warning"
    source = f"torchscope (issue 29): busy shares {format_share(REGIME_GAP)} apart"

    def skip(self, ctx: Context, measured: Metrics) -> str | None:
        if ctx.timeline() is None:
            return "no device activity recorded"
        if len(measured.steps) < 4:
            return "fewer than 4 steps: two regimes need two steps each"
        return None

    def match(self, ctx: Context, measured: Metrics) -> list[Finding]:
        steps = list(measured.steps)
        regimes = find_regimes(steps)
        if regimes is None:
            return []
        steady, other = regimes.steady, regimes.other
        steady_share = regime_share(steps, steady)
        other_share = regime_share(steps, other)
        # the idle the slower regime has beyond the busier one's share, over every step:
        # whichever of the two is the steady one (the run had its 15 steady steps
        # at 39 % and 14 at 99 %, and this read 0)
        slow, fast = (other, steady) if other_share < steady_share else (steady, other)
        gap = regime_share(steps, fast) - regime_share(steps, slow)
        cost = max(0.0, gap * sum(steps[i].span_us for i in slow)) / len(steps)
        return [
            self.finding(
                f"the steps run in two regimes: {len(steady)} steps at "
                f"{format_share(steady_share)} GPU busy ({_names(steps, steady)}) and "
                f"{len(other)} at {format_share(other_share)} ({_names(steps, other)}); "
                f"the verdict uses the {len(steady)} steady steps' totals. Find what the two "
                "kinds of step do differently (DataLoader waits, syncs, recompiles): the gap "
                f"costs {format_duration(cost)} per step",
                cost,
                steady_steps=len(steady),
                steady_share=steady_share,
                steady=[steps[i].name for i in steady],
                other_steps=len(other),
                other_share=other_share,
                other=[steps[i].name for i in other],
            )
        ]


RULE = StepRegimes()
