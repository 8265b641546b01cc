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

- Issue 55: an intensity "below" the ridge point is below it, and only memory-bound says so;
  no share of a whole over 100 %; a headline's "~N % dispatch" is its cause's share; a
  finding's cost is at most the longest profiled step (or, for ``CALL_COSTS``, the call), and
  one over the unprofiled call comes with the note that costs are per profiled step; "N×
  faster" is at least 1×; a sweep's rows agree with its crossover line
  (``sweep_check.sweep_problems``).

``contradictions`` lists what is wrong (``CHECKS``, one small function each: another part's
check of its own object slots in as one more entry). The tests run it on every vendored trace;
with ``TORCHSCOPE_SELF_CHECK=1`` (the test suite sets it) every analysis raises on a
contradiction, and the codec runs ``self_check`` on every report it encodes or decodes
(``protocol.register_check``), logging to ``TORCHSCOPE_SELF_CHECK_LOG`` for the suite's hook.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable

from ...protocol import register_check
from ..results import ABComparison, Report
from .comparison_check import comparison_problems
from .cost_basis import CALL_COSTS, NOTE_START, profiled_findings

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


def _compute_bound(report: Report) -> list[str]:
    v, out = report.verdict, []
    if v.id == "compute-bound" and v.cause and v.cause not in DEVICE_CAUSES:
        out.append(f"compute-bound names the cause {v.cause!r}")
    if v.id == "compute-bound" and report.device.kind == "cpu" and v.efficiency is None:
        out.append("compute-bound on a CPU without an efficiency held to a peak")
    return out


def _cause_findings(report: Report) -> list[str]:
    v = report.verdict
    rules = {f.rule for f in report.findings}
    wanted = CAUSE_FINDINGS.get(v.cause, ())
    if wanted and not rules.intersection(wanted):
        return [f"the verdict names {v.cause!r} but no {' or '.join(wanted)} finding"]
    return []


def _regimes(report: Report) -> list[str]:
    regimes = [f for f in report.findings if f.rule == "step-regimes"]
    if not regimes:
        return []
    f, out = regimes[0], []
    if not re.search(r": in \d+ of \d+ steps, ", report.verdict.headline):
        out.append("two regimes, but the headline does not name its steps")
    low, high = sorted((float(f.details["steady_share"]), float(f.details["other_share"])))
    if high >= 2 * low and f.cost_us <= 0:
        out.append("step-regimes costs nothing though its regimes differ 2×")
    return out


def contradictions(report: Report) -> list[str]:
    """Every way ``report`` contradicts itself (empty: none): each check in ``CHECKS``."""
    return [problem for check in CHECKS for problem in check(report)]


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


_NUMBER = r"(\d+(?:\.\d+)?(?:e[+-]?\d+)?)"
_RIDGE = re.compile(
    rf"intensity {_NUMBER} FLOP/B, (below|above) the ridge point of {_NUMBER}", re.IGNORECASE
)
_SHARE_OF = re.compile(
    rf"{_NUMBER} % of (?:the call|the step|each step|a step|GPU time|[^,;()]*?(?:peak|bandwidth))"
)
"""Shares of a whole (the call, the step, a peak): at most 100 %. A difference may exceed it
("105 % of the median rank's compute") and is not matched."""
_TIMES = re.compile(rf"{_NUMBER}× (faster|slower)")


def _texts(report: Report) -> list[str]:
    """Every sentence the report states: the headline and the findings' messages."""
    return [report.verdict.headline, *(f.message for f in report.findings)]


def _ridge_words(report: Report) -> list[str]:
    """An intensity "below" the ridge point is below it (and "above" above it), and only a
    memory-bound verdict says its ops are below it (issue 55: "16 FLOP/B, below 6.51")."""
    out: list[str] = []
    for text in _texts(report):
        for x, word, ridge in _RIDGE.findall(text):
            below = float(x) <= float(ridge)
            if (word.lower() == "below") != below and float(x) != float(ridge):
                out.append(f"intensity {x} FLOP/B is said to be {word} the ridge point {ridge}")
    v = report.verdict
    if "below the ridge point" in v.headline and not v.id.startswith("memory-bound"):
        out.append(f"{v.id} says its ops are below the ridge point (that is memory-bound)")
    return out


def _shares(report: Report) -> list[str]:
    """No share over 100 %: the words' ``N % of``, the causes' shares and the efficiencies."""
    out = [
        f"{n} % of something in {text[:60]!r}"
        for text in _texts(report)
        for n in _SHARE_OF.findall(text)
        if float(n) > 100
    ]
    v = report.verdict
    out += [f"cause {c.cause} has a share of {c.share:.3g}" for c in v.causes if c.share > 1]
    cpu = report.device.kind == "cpu"  # a GPU's causes overlap (a sync waits on a copy)
    if cpu and v.causes and sum(c.share for c in v.causes) > 1 + SHARE_SLACK:
        out.append("the causes add up to more than the call")
    effs = [("the verdict", v.efficiency)] + [(o.name, o.efficiency) for o in report.top_ops]
    out += [f"{who} has an efficiency of {e:.3g}" for who, e in effs if e is not None and e > 1]
    return out


SHARE_SLACK = 0.01
"""Rounding: shares of one time may add up to a hair over one."""

COST_SLACK = 0.05
"""A finding's per-step cost is an average over steps; the longest step bounds it, with
rounding."""


def _costs_within_step(report: Report) -> list[str]:
    """A finding's cost is part of the time it measures: a profiled step (at most the longest
    one; its span on a GPU, where the device runs behind the CPU), or for ``CALL_COSTS`` the
    unprofiled call the headline gives."""
    v = report.verdict
    out = [
        f"{f.rule} costs {f.cost_us:.0f} µs, more than the {v.cpu_us:.0f} µs call"
        for f in report.findings
        if f.rule in CALL_COSTS and v.basis == "measurements"
        if f.cost_us > v.cpu_us * (1 + COST_SLACK)
    ]
    spans = [max(s.wall_us, s.span_us) for s in report.steps]
    if not spans:
        return out
    longest = max(spans)
    return out + [
        f"{f.rule} costs {f.cost_us:.0f} µs, more than the longest step ({longest:.0f} µs)"
        for f in profiled_findings(report.findings)
        if f.cost_us > longest * (1 + COST_SLACK)
    ]


def _costs_vs_call(report: Report) -> list[str]:
    """A finding costing more than the unprofiled call the headline gives comes with the note
    that costs are profiled-step figures (``cost_basis``)."""
    v = report.verdict
    if v.basis != "measurements" or v.cpu_us <= 0:
        return []
    over = [
        f for f in profiled_findings(report.findings) if f.cost_us > v.cpu_us * (1 + COST_SLACK)
    ]
    if over and not any(n.startswith(NOTE_START) for n in report.notes):
        return [
            f"{over[0].rule} costs {over[0].cost_us:.0f} µs in a {v.cpu_us:.0f} µs call, and no "
            "note says the costs are per profiled step"
        ]
    return []


def _comparatives(report: Report) -> list[str]:
    """ "N× faster" / "N× slower" is at least 1×."""
    return [
        f"{n}× {word} is not {word}"
        for text in _texts(report)
        for n, word in _TIMES.findall(text)
        if float(n) < 1
    ]


CAUSE_WORDS = {
    "dispatch": re.compile(r"~(\d+) % dispatch"),
    "rng": re.compile(r"~(\d+) % drawing random numbers"),
    "bandwidth": re.compile(r"~(\d+) % in (?:ops that move bytes|\S+ on )"),
}
"""The CPU headlines' "~N % <cause>" phrases → the cause whose share they state."""


def _cause_share_words(report: Report) -> list[str]:
    """A headline's "~N % dispatch" (random numbers, bytes moved) is its cause's share of the
    call, to the rounding of a whole percent."""
    v = report.verdict
    shares = {c.cause: c.share for c in v.causes}
    out: list[str] = []
    for cause, pattern in CAUSE_WORDS.items():
        for n in pattern.findall(v.headline):
            share = shares.get(cause, 0.0) * 100
            if abs(float(n) - share) > 1:
                out.append(f"the headline says ~{n} % {cause}, its cause's share is {share:.0f} %")
    return out


_EFFICIENCY = re.compile(
    rf"{_NUMBER} % of (?:this \w+'s measured peak|[^,;()]*?spec-sheet peak|"
    r"(?:measured|spec-sheet) bandwidth)"
)


def _efficiency_words(report: Report) -> list[str]:
    """The headline's "N % of this CPU's measured peak" (or of the bandwidth) is the verdict's
    efficiency, to the rounding of a whole percent."""
    v = report.verdict
    said = _EFFICIENCY.findall(v.headline)
    if not said or v.efficiency is None:
        return []
    if abs(float(said[0]) - v.efficiency * 100) > 1:
        return [f"the headline says {said[0]} % of the peak, its efficiency is {v.efficiency:.0%}"]
    return []


CHECKS: tuple[Callable[[Report], list[str]], ...] = (
    lambda r: _order(r) if r.verdict.causes else [],
    _compute_bound,
    _cause_findings,
    _idle_and_busy,
    _regimes,
    _ridge_words,
    _shares,
    _costs_within_step,
    _costs_vs_call,
    _comparatives,
    _cause_share_words,
    _efficiency_words,
)
"""The checks, each a small function of the report returning what it finds wrong; a check of
another part's object (the A/B comparison's) slots in here as one more entry."""


SELF_CHECK_LOG = "TORCHSCOPE_SELF_CHECK_LOG"
"""Environment variable: a file every contradiction found by ``self_check`` is appended to
(the test suite's hook reads it after each test, so a contradiction in a server child that
answered with an error message, or in a thread, still fails the test)."""


def fail(where: str, found: list[str]) -> None:
    """Log (``SELF_CHECK_LOG``) and raise one self-check failure."""
    text = f"the {where} contradicts itself: {'; '.join(found)}"
    log = os.environ.get(SELF_CHECK_LOG)
    if log:
        with open(log, "a", encoding="utf-8") as f:
            f.write(text.replace("\n", " ") + "\n")
    raise AssertionError(text)


def self_check(report: Report) -> None:
    """Raise when ``TORCHSCOPE_SELF_CHECK`` is set and the report contradicts itself."""
    if os.environ.get(SELF_CHECK) == "1":
        found = contradictions(report)
        if found:
            fail("report", found)


def self_check_comparison(comparison: ABComparison) -> None:
    """As :func:`self_check`, for an A/B comparison (``comparison_check.py``)."""
    if os.environ.get(SELF_CHECK) == "1":
        found = comparison_problems(comparison)
        if found:
            fail("comparison", found)


if os.environ.get(SELF_CHECK) == "1":
    register_check(Report, self_check)
    register_check(ABComparison, self_check_comparison)
