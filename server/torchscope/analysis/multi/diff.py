"""Before and after: did the edit make the function faster? A verdict with an interval.

Inputs are what one worker job measured: the per-call times of the earlier and the current
version in *interleaved* rounds (round ``i`` of each side ran back to back), the two analysed
reports, an :class:`~.compare.Inventory` of each trace, and the two sources. Pure Python.

Statistics (README "Before and after"): the A/B engine's (:mod:`.ab`, over :mod:`.interval`):
the ratio is median(after) / median(before) over the kept rounds with its paired-bootstrap
95 % interval, widened by the rounds' measured noise; ``faster`` / ``slower`` when all of it
clears the ±5 % band, ``no-difference`` when all of it is inside, else ``inconclusive``.
"""

from __future__ import annotations

import difflib
import statistics
from dataclasses import dataclass
from typing import Any, Optional

from ..formatting import format_duration, format_share
from ..results import ABComparison, Machine, Measurements, Report
from .ab import ABRounds, as_comparison, compare_rounds
from .compare import TRIVIAL_OPS
from .comparison import SideVerdict
from .interval import CONFIDENCE, RatioInterval, ratio_interval
from .inventory import Inventory

VERDICTS = ("faster", "slower", "no-difference", "inconclusive")
"""The A/B engine's decisions (``ab.compare_rounds``)."""

CHANGED_SHARE = 0.10
"""An op present on both sides counts as *changed* when its calls differ, or its self time per
call by more than this share (profiled times wobble by a few percent)."""

LINES_SHOWN = 10


@dataclass(frozen=True)
class DiffVerdict:
    """``faster`` / ``slower`` / ``no-difference``: the contract's ``diff.verdict``."""

    id: str
    headline: str
    ratio: float
    ci_low: float
    ci_high: float
    band: float
    noise: float
    rounds: int
    confidence: float = CONFIDENCE


def decide(
    source: ABComparison | RatioInterval, label: str, before_us: float, after_us: float
) -> DiffVerdict:
    """The engine's decision (``ab.compare_rounds``) as the diff's verdict, with its headline:
    ``faster than HEAD: 1.32× faster (1.10×–1.50× faster); 2.0 ms → 1.5 ms per call`` — the
    phrase gives the ratio and its interval in one direction, in one pair of parentheses."""
    c = as_comparison(source)
    times = f"{format_duration(before_us)} → {format_duration(after_us)} per call"
    low, high = c.interval
    lead = {
        "faster": f"faster than {label}",
        "slower": f"slower than {label}",
        "no-difference": f"no difference from {label}",
        "inconclusive": f"inconclusive against {label}",
    }[c.decision]
    band = f"±{format_share(c.band)}"
    said = {
        "no-difference": f", within {band}",
    }.get(c.decision, "")
    headline = f"{lead}: {c.phrase}{said}; {times}"
    if not c.stable or c.decision == "inconclusive":
        headline += f" — {c.reason}"
    return DiffVerdict(c.decision, headline, c.ratio, low, high, c.band, c.noise, c.rounds)


@dataclass(frozen=True)
class OpChange:
    """An op or kernel that appeared, disappeared or changed (calls and µs per call)."""

    kind: str  # "op" | "kernel"
    name: str
    status: str  # "appeared" | "disappeared" | "changed"
    before_calls: float
    after_calls: float
    before_us: float
    after_us: float


def ops_changed(
    before: Inventory, after: Inventory, before_report: Report, after_report: Report
) -> list[OpChange]:
    """Ops and kernels that appeared, disappeared, or changed count or time (per call)."""
    rows: list[OpChange] = []
    b_ops = {r.name: r for r in before.ops}
    a_ops = {r.name: r for r in after.ops}
    for name in [*b_ops, *(n for n in a_ops if n not in b_ops)]:
        if name in TRIVIAL_OPS:
            continue
        b, a = b_ops.get(name), a_ops.get(name)
        row = _row(
            "op",
            name,
            (b.calls, b.self_cpu_us) if b else None,
            (a.calls, a.self_cpu_us) if a else None,
        )
        if row:
            rows.append(row)
    b_k = {k.name: k for k in before_report.top_kernels}
    a_k = {k.name: k for k in after_report.top_kernels}
    steps_b, steps_a = max(1, len(before_report.steps)), max(1, len(after_report.steps))
    for name in [*b_k, *(n for n in a_k if n not in b_k)]:
        kb, ka = b_k.get(name), a_k.get(name)
        row = _row(
            "kernel",
            name,
            (kb.calls / steps_b, kb.median_us * kb.calls / steps_b) if kb else None,
            (ka.calls / steps_a, ka.median_us * ka.calls / steps_a) if ka else None,
        )
        if row:
            rows.append(row)
    order = {"appeared": 0, "disappeared": 0, "changed": 1}
    rows.sort(key=lambda r: (order[r.status], -abs(r.after_us - r.before_us)))
    return rows


def _row(
    kind: str,
    name: str,
    before: Optional[tuple[float, float]],
    after: Optional[tuple[float, float]],
) -> Optional[OpChange]:
    b_calls, b_us = before or (0.0, 0.0)
    a_calls, a_us = after or (0.0, 0.0)
    if before is None:
        status = "appeared"
    elif after is None:
        status = "disappeared"
    elif abs(a_calls - b_calls) > 1e-9 or abs(a_us - b_us) > CHANGED_SHARE * max(a_us, b_us):
        status = "changed"
    else:
        return None
    return OpChange(kind, name, status, b_calls, a_calls, b_us, a_us)


def line_map(before_source: str, after_source: str) -> dict[int, int]:
    """Before line → after line (1-based) for the lines ``difflib`` finds unchanged, and for
    the lines of a replaced block of the same length (an edited line stays itself)."""
    b_lines, a_lines = before_source.splitlines(), after_source.splitlines()
    mapping: dict[int, int] = {}
    matcher = difflib.SequenceMatcher(None, b_lines, a_lines, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal" or (tag == "replace" and i2 - i1 == j2 - j1):
            for k in range(i2 - i1):
                mapping[i1 + k + 1] = j1 + k + 1
    return mapping


@dataclass(frozen=True)
class LineChange:
    """One line's time per call before and after (``line``: now; ``before_line``: then)."""

    line: Optional[int]
    before_line: Optional[int]
    text: str
    status: str  # "changed" | "added" | "removed"
    before_us: float
    after_us: float
    before_device_us: float
    after_device_us: float


def lines_changed(
    before_report: Report, after_report: Report, before_source: str, after_source: str
) -> list[LineChange]:
    """The lines whose time per call changed most, matched across the edit."""
    mapping = line_map(before_source, after_source)
    a_text, b_text = after_source.splitlines(), before_source.splitlines()
    after = {s.line: s for s in after_report.lines}
    rows: list[LineChange] = []
    seen: set[int] = set()
    for s in before_report.lines:
        target = mapping.get(s.line)
        a = after.get(target) if target is not None else None
        if a is not None:
            seen.add(a.line)
        rows.append(_line_row(s.line, target, s, a, b_text, a_text))
    for a in after_report.lines:
        if a.line not in seen:
            back = next((b for b, t in mapping.items() if t == a.line), None)
            rows.append(_line_row(back, a.line, None, a, b_text, a_text))
    rows.sort(key=lambda r: -abs(r.after_us - r.before_us))
    return rows[:LINES_SHOWN]


def _line_row(
    b_line: Optional[int],
    a_line: Optional[int],
    b: Any,
    a: Any,
    b_text: list[str],
    a_text: list[str],
) -> LineChange:
    line, text = (a_line, a_text) if a_line is not None else (b_line, b_text)
    source = text[line - 1].strip() if line is not None and 0 < line <= len(text) else ""
    status = "changed" if a is not None and b is not None else ("added" if b is None else "removed")
    if a_line is not None and b is None and b_line is not None:
        status = "changed"  # the line was there but did no measurable work before
    return LineChange(
        a_line,
        b_line,
        source,
        status,
        b.cpu_us if b is not None else 0.0,
        a.cpu_us if a is not None else 0.0,
        b.device_us if b is not None else 0.0,
        a.device_us if a is not None else 0.0,
    )


@dataclass(frozen=True)
class SideSummary:
    """One version's numbers: ``median_us`` over the interleaved rounds, its own verdict."""

    median_us: float
    min_us: Optional[float]
    max_us: Optional[float]
    cold_us: Optional[float]
    rounds: int
    verdict: SideVerdict
    trace_path: str


def _summary(side: DiffSide) -> SideSummary:
    timing, report = side.report.timing, side.report
    return SideSummary(
        median_us=statistics.median(side.call_us),
        min_us=timing.min_us if timing else None,
        max_us=timing.max_us if timing else None,
        cold_us=timing.cold_us if timing else None,
        rounds=timing.calls if timing else 0,
        verdict=SideVerdict(report.verdict.id, report.verdict.headline),
        trace_path=side.trace_path,
    )


@dataclass(frozen=True)
class DiffSide:
    """One version: its per-round times, report, inventory, source and trace."""

    label: str
    call_us: list[float]
    report: Report
    inventory: Inventory
    source: str
    trace_path: str = ""
    measured: Optional[Measurements] = None
    """The worker's measurements of the side: its rounds' waits, the machine, its stability."""


@dataclass(frozen=True)
class Diff:
    """Before and after; ``to_builtins`` of it is the ``diff`` object of ``diff --json``."""

    label: str
    verdict: DiffVerdict
    before: SideSummary
    after: SideSummary
    ops_changed: list[OpChange]
    lines_changed: list[LineChange]
    interval: RatioInterval
    comparison: Optional[ABComparison] = None
    """The A/B engine's object (``ab.compare_rounds``): the same in every command."""
    machine: Optional[Machine] = None
    """How busy the machine was over the rounds (``profile``'s ``machine``; None: unknown)."""


def _rounds(before: DiffSide, after: DiffSide) -> ABRounds:
    if before.measured is not None and after.measured is not None:
        return ABRounds.of(before.measured, after.measured)
    return ABRounds(list(before.call_us), list(after.call_us))


def diff_runs(before: DiffSide, after: DiffSide) -> Diff:
    """Compare two versions measured in one job (interleaved rounds)."""
    interval = ratio_interval(before.call_us, after.call_us)
    comparison = compare_rounds(_rounds(before, after))
    b_side, a_side = _summary(before), _summary(after)
    return Diff(
        label=before.label,
        verdict=decide(comparison, before.label, b_side.median_us, a_side.median_us),
        before=b_side,
        after=a_side,
        ops_changed=ops_changed(before.inventory, after.inventory, before.report, after.report),
        lines_changed=lines_changed(before.report, after.report, before.source, after.source),
        interval=interval,
        comparison=comparison,
        machine=_rounds(before, after).machine,
    )
