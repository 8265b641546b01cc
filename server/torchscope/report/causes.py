"""The verdict's causes as one short table: the costliest first, then the runners-up.

The CLI prints it under the verdict line and the ``def`` hover shows it as Markdown, so the
user sees what else costs time and how much (``analysis/verdict/causes.py`` measures them).
"""

from __future__ import annotations

from torchscope.analysis.formatting import format_duration, format_share
from torchscope.analysis.results import Cause, Verdict

MAX_ROWS = 4
"""The costliest cause and up to three runners-up: the rest are a few per cent at most."""

HIDDEN_NOTE = (
    "* the GPU's own work: the GPU waits on the host for over 20 % of the step, so a faster "
    "kernel would only idle it longer"
)
"""Under the table when it lists a ``hidden`` cause (``Cause.hidden``)."""


def _shown(verdict: Verdict) -> list[Cause]:
    """Up to ``MAX_ROWS`` causes in the verdict's order, keeping the largest hidden one (a
    GPU's kernels at 56 % of an input-bound step are worth a row)."""
    held = [c for c in verdict.causes if not c.hidden]
    hidden = [c for c in verdict.causes if c.hidden][:1]
    return held[: MAX_ROWS - len(hidden)] + hidden


def cause_rows(verdict: Verdict) -> list[tuple[str, str, str]]:
    """(cause, cost, share) per cause, costliest first; empty with fewer than two causes
    (the headline already says everything)."""
    if len(verdict.causes) < 2:
        return []
    per = "per step" if verdict.device_us > 0 or verdict.id.endswith("kernels") else "per call"
    return [
        (
            c.cause + ("*" if c.hidden else ""),
            f"{format_duration(c.us_per_call)} {per}",
            format_share(c.share),
        )
        for c in _shown(verdict)
    ]


def causes_text(verdict: Verdict) -> list[str]:
    """``causes:`` and one aligned row per cause for the terminal report."""
    rows = cause_rows(verdict)
    if not rows:
        return []
    widths = [max(len(r[i]) for r in rows) for i in range(3)]
    hidden = any(r[0].endswith("*") for r in rows)
    out = ["causes (what holds the step first):" if hidden else "causes (costliest first):"]
    for name, cost, share in rows:
        out.append(f"  {name:<{widths[0]}}  {cost:>{widths[1]}}  {share:>{widths[2]}}")
    if hidden:
        out.append(f"  {HIDDEN_NOTE}")
    return out


def causes_markdown(verdict: Verdict) -> str | None:
    """The same rows as a Markdown table for the hover (None: fewer than two causes)."""
    rows = cause_rows(verdict)
    if not rows:
        return None
    lines = ["| cause | cost | share |", "|---|---:|---:|"]
    lines += [f"| {name} | {cost} | {share} |" for name, cost, share in rows]
    if any(r[0].endswith("*") for r in rows):
        lines += ["", "\\" + HIDDEN_NOTE]
    return "\n".join(lines)


def cause_phrase(verdict: Verdict) -> str:
    """`` · cause: threads (62 % of the call)``: what the ``def``-line diagnostic adds to the
    headline, so the Problems panel names the cause too (``""`` when no cause was measured)."""
    if not verdict.cause:
        return ""
    share = next((c.share for c in verdict.causes if c.cause == verdict.cause), None)
    whole = "step" if verdict.device_us > 0 or verdict.id.endswith("kernels") else "call"
    cost = f" ({format_share(share)} of the {whole})" if share is not None else ""
    return f" · cause: {verdict.cause}{cost}"
