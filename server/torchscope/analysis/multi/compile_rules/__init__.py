"""The rules over an eager vs ``torch.compile`` comparison (``analysis/multi/compare.py``), kept
out of the single-trace rules' discovery: analysing one trace never imports them."""

from __future__ import annotations

from ...results import Finding
from . import compile_copy, compile_slower, graph_break, recompile
from .base import CompareContext, CompareRule

COMPARE_RULES: list[CompareRule] = [
    compile_slower.RULE,
    compile_copy.RULE,
    recompile.RULE,
    graph_break.RULE,
]
"""Rules over an eager vs ``torch.compile`` comparison, in the order their findings are listed."""

__all__ = ["COMPARE_RULES", "CompareContext", "CompareRule", "run_compare_rules"]


def run_compare_rules(cctx: CompareContext) -> tuple[list[Finding], dict[str, str]]:
    """The comparison's findings in rule order, and ``{rule id: why skipped}``."""
    findings: list[Finding] = []
    skipped: dict[str, str] = {}
    for rule in COMPARE_RULES:
        reason = rule.skip(cctx)
        if reason is not None:
            skipped[rule.id] = reason
            continue
        findings.extend(rule.match(cctx))
    return findings, skipped
