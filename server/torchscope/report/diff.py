"""Before and after in words: the verdict with its interval, each side's time per call, then
the ops and lines that changed (``torchscope diff``, ``torchscope check``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from torchscope.analysis.formatting import format_duration, format_share
from torchscope.report.stability import comparison_lines

if TYPE_CHECKING:
    from torchscope.analysis import Diff


def render_diff(diff: Diff) -> str:
    """The comparison as terminal text."""
    verdict = diff.verdict
    lines = [f"verdict: {verdict.id}: {verdict.headline}"]
    lines.append(
        f"  ratio {verdict.ratio:.3f} (after / before per call), "
        f"{verdict.confidence:.0%} interval {verdict.ci_low:.3f}–{verdict.ci_high:.3f} "
        f"over {verdict.rounds} interleaved rounds; no-difference band "
        f"±{format_share(verdict.band)}"
    )
    lines += comparison_lines(diff.comparison)
    for name, side in (("before", diff.before), ("after", diff.after)):
        what = diff.label if name == "before" else "now"
        lines.append(
            f"  {name} ({what}): {format_duration(side.median_us)} per call "
            f"(min {format_duration(side.min_us or 0)}, first call "
            f"{format_duration(side.cold_us or 0)})"
        )
    for row in diff.ops_changed[:12]:
        lines.append(
            f"  {row.status:>11} {row.kind} {row.name}: {row.before_calls:g} → "
            f"{row.after_calls:g} calls, {format_duration(row.before_us)} → "
            f"{format_duration(row.after_us)} per call"
        )
    for change in diff.lines_changed:
        where = f"line {change.line}" if change.line else f"(was line {change.before_line})"
        lines.append(
            f"  {where}: {format_duration(change.before_us)} → "
            f"{format_duration(change.after_us)} per call  {change.text[:60]}"
        )
    return "\n".join(lines)
