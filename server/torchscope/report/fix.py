"""Measured fixes in words: the fixes that apply to a function (``torchscope fix --list``) and
the outcome of trying one (``--try``): the measured line, then the patch."""

from __future__ import annotations

from typing import TYPE_CHECKING

from torchscope.report.stability import comparison_lines

if TYPE_CHECKING:
    from torchscope.analysis.results import FixOffer
    from torchscope.source.fixes import Fix, Site
    from torchscope.source.fixes.trial import FixTrial


def fix_phrase(offer: FixOffer | None) -> str:
    """What a finding's diagnostic adds about its fix: `` · fix: use F.scaled_dot_product_
    attention (Try fix to measure)`` until it was tried, then `` · fix sdpa: measured 2.3×
    faster (95 % interval 2.1×–2.5×), same outputs`` (``""`` without a fix)."""
    if offer is None:
        return ""
    if offer.measured is None:
        return f" · fix: {offer.title} (Try fix to measure)"
    return f" · fix {offer.rule}: {offer.measured.get('message', '')}"


def render_fix_list(qualname: str, offers: list[tuple[Fix, Site, list[str]]]) -> str:
    """One line per fix and place: ``line 14  sdpa  use F.scaled_dot_product_attention``,
    ``(CUDA only)`` where it gains only there, then what it assumes."""
    if not offers:
        return f"no fix applies to {qualname}"
    lines = [f"fixes for {qualname} (try one with --try ID: it checks what the fix assumes):"]
    for fix, site, devices in offers:
        only = f" ({devices[0].upper()} only)" if len(devices) == 1 and devices[0] == "cuda" else ""
        lines.append(f"  line {site.line:<5} {fix.id:<16} {fix.title}{only}")
        lines.append(f"  {'':<10} {'':<16} assumes: {fix.assumes}")
    return "\n".join(lines)


def render_trial(trial: FixTrial, applied: bool, apply_asked: bool) -> str:
    """The measured line, what it assumed and checked, what happened to the file, the patch."""
    lines = [f"{trial.id}: {trial.message}", *comparison_lines(trial.comparison, reason=True)]
    if trial.assumes:
        lines.append(f"  assumes: {trial.assumes}")
    if trial.checks:
        lines.append(f"  checked: {', '.join(trial.checks)}")
    for item in trial.unchecked:
        lines.append(f"  not checked: {item}")
    if applied:
        lines.append("applied: the file now holds the rewrite")
    elif trial.offered:
        lines.append(
            "not applied (add --apply to write it)"
            if not apply_asked
            else ("not applied: the file changed while the fix was measured")
        )
    lines.append("")
    lines.append(trial.patch.rstrip("\n"))
    return "\n".join(lines)
