"""What a finding's cost is a part of (issue 55): the profiled step, not the unprofiled call.

Findings put a cost on profiled time (the ops' times under the profiler, per profiled step).
When the headline gives the unprofiled time per call (``Verdict.basis == "measurements"``) and
a finding costs more than that call, the profiler slowed the steps (2-8× on small ops): the
report says in a note that the costs are profiled-step figures, with the step's and the call's
times from its own fields (``steps[].wall_us``, ``verdict.cpu_us``), so a reader never sees a
17 ms finding in a 6.8 ms call without being told why. ``consistency`` holds the two together.
"""

from __future__ import annotations

from ..formatting import format_duration
from ..index.columns import median
from ..results import Finding, StepMetrics, Verdict

NOTE_START = "finding costs are per profiled step"

CALL_COSTS = ("thread-contention", "allocation-churn")
"""Findings whose cost is a part of the unprofiled call (the timing pass's numbers), not of a
profiled step."""


def profiled_findings(findings: list[Finding]) -> list[Finding]:
    """The findings whose cost is a part of a profiled step: not ``CALL_COSTS``, not one-off
    costs (``once``: the first call's)."""
    return [f for f in findings if f.rule not in CALL_COSTS and not f.details.get("once")]


def profiled_cost_note(
    verdict: Verdict, steps: list[StepMetrics], findings: list[Finding]
) -> str | None:
    """The note, when a finding costs more than the unprofiled call (None otherwise)."""
    call = verdict.cpu_us
    if verdict.basis != "measurements" or call <= 0 or not steps or not findings:
        return None
    profiled = [f.cost_us for f in profiled_findings(findings)]
    if not profiled or max(profiled) <= call:
        return None
    step = median([s.wall_us for s in steps])
    return (
        f"{NOTE_START}: a profiled step took {format_duration(step)} (median of {len(steps)}), "
        f"{step / call:.2g}× the {format_duration(call)} unprofiled call the headline gives; the "
        "profiler slows every op, so weigh the costs against each other and the step, not the "
        "call"
    )
