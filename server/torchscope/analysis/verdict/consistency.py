"""The report never contradicts itself (issue 40): the checks, in one place.

- The verdict names its first cause (``verdict.cause == verdict.causes[0].cause``), and the
  causes are in the order of what holds the step: costliest first, and on a GPU idle for more
  than a fifth of the step, the device's own work (``hidden``) after the rest.
- ``compute-bound`` names a cause of the device's or the ops' work, never an overhead, and on
  a CPU only with an efficiency held to a peak.
- A cause with a finding of its own has that finding (``CAUSE_FINDINGS``): ``threads`` comes
  with ``thread-contention``, ``input`` with ``dataloader``, and so on.
- The GPU is not idle and busy at once: ``gpu-idle``'s share and the busy share add up to at
  most one (over the step's span, where the device runs behind the CPU).
- With two regimes of steps the headline says how many steps its figures come from, and
  ``step-regimes`` puts a cost on the gap.

``contradictions`` lists what is wrong. The tests run it on every vendored trace, and with
``TORCHSCOPE_SELF_CHECK=1`` (the test suite sets it) every analysis raises on a contradiction,
so every worker test's report is held to it too.
"""

from __future__ import annotations

import os
import re

from ..results import ABComparison, Report
from .comparison_check import comparison_problems

CAUSE_FINDINGS: dict[str, tuple[str, ...]] = {
    "threads": ("thread-contention",),
    "page-faults": ("allocation-churn",),
    "input": ("dataloader",),
    "sync": ("sync", "pageable-copy"),
    "comm": ("comm-heavy", "comm-overlap"),
}
"""A cause → the findings that measure it (one of them must be in the report when the verdict
names the cause). ``dispatch``, ``compute`` and ``bandwidth`` have no finding of their own
that must fire: a 2-op call is all dispatch and has nothing more to find."""

DEVICE_CAUSES = ("compute", "comm", "bandwidth")

SELF_CHECK = "TORCHSCOPE_SELF_CHECK"
"""Environment variable: ``1`` makes every analysis raise on a contradiction (tests)."""


def _order(report: Report) -> list[str]:
    v = report.verdict
    out: list[str] = []
    if v.cause != v.causes[0].cause:
        out.append(f"verdict cause {v.cause!r} is not its first cause {v.causes[0].cause!r}")
    held = [c for c in v.causes if not c.hidden]
    hidden = [c for c in v.causes if c.hidden]
    if v.causes != held + hidden:
        out.append("a hidden cause is ranked before a cause that holds the step")
    for group in (held, hidden):
        costs = [c.us_per_call for c in group]
        if costs != sorted(costs, reverse=True):
            out.append(f"causes not costliest first: {[(c.cause, c.us_per_call) for c in group]}")
    return out


def contradictions(report: Report) -> list[str]:
    """Every way ``report`` contradicts itself (empty: none)."""
    v = report.verdict
    out = _order(report) if v.causes else []
    if v.id == "compute-bound" and v.cause and v.cause not in DEVICE_CAUSES:
        out.append(f"compute-bound names the cause {v.cause!r}")
    if v.id == "compute-bound" and report.device.kind == "cpu" and v.efficiency is None:
        out.append("compute-bound on a CPU without an efficiency held to a peak")
    rules = {f.rule for f in report.findings}
    wanted = CAUSE_FINDINGS.get(v.cause, ())
    if wanted and not rules.intersection(wanted):
        out.append(f"the verdict names {v.cause!r} but no {' or '.join(wanted)} finding")
    out += _idle_and_busy(report)
    regimes = [f for f in report.findings if f.rule == "step-regimes"]
    if regimes:
        f = regimes[0]
        if not re.search(r": in \d+ of \d+ steps, ", v.headline):
            out.append("two regimes, but the headline does not name its steps")
        low, high = sorted((float(f.details["steady_share"]), float(f.details["other_share"])))
        if high >= 2 * low and f.cost_us <= 0:
            out.append("step-regimes costs nothing though its regimes differ 2×")
    return out


IDLE_BUSY_SLACK = 0.1
"""Medians of different steps: idle and busy shares may add up to a little over one."""


def _idle_and_busy(report: Report) -> list[str]:
    """The GPU is not idle and busy in the same time: ``gpu-idle``'s share of the step and the
    device's busy share add up to at most one (the CPU's window alone once read a GPU busy
    100 % as idle 100 %)."""
    idle = [f for f in report.findings if f.rule == "gpu-idle"]
    spans = [s.span_us for s in report.steps if s.span_us > 0]
    if not idle or not spans:
        return []
    span = sorted(spans)[len(spans) // 2]
    busy = sorted(s.device_busy_share for s in report.steps)[len(report.steps) // 2]
    share = idle[0].cost_us / span
    if share + busy > 1 + IDLE_BUSY_SLACK:
        return [f"gpu-idle says idle {share:.0%} of a step while the GPU is busy {busy:.0%}"]
    return []


def self_check(report: Report) -> None:
    """Raise when ``TORCHSCOPE_SELF_CHECK`` is set and the report contradicts itself."""
    if os.environ.get(SELF_CHECK) == "1":
        found = contradictions(report)
        if found:
            raise AssertionError(f"the report contradicts itself: {'; '.join(found)}")


def self_check_comparison(comparison: ABComparison) -> None:
    """As :func:`self_check`, for an A/B comparison (``comparison_check.py``)."""
    if os.environ.get(SELF_CHECK) == "1":
        found = comparison_problems(comparison)
        if found:
            raise AssertionError(f"the comparison contradicts itself: {'; '.join(found)}")
