"""The cross-rank rules, run over a :class:`RankContext` (see ``analysis/multi/ranks.py``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...results import Finding
from . import comm_heavy, comm_overlap, imbalance, straggler
from .base import RankRule

if TYPE_CHECKING:  # only annotations: analysing one trace never imports rank_model
    from ..rank_model import RankContext

RANK_RULES: list[RankRule] = [
    straggler.RULE,
    comm_heavy.RULE,
    imbalance.RULE,
    comm_overlap.RULE,
]


def run_rank_rules(rctx: RankContext) -> tuple[list[Finding], dict[str, str]]:
    """Cross-rank findings, largest cost first, and ``{rule id: why skipped}``; a rule that
    raises is listed as ``failed: …`` and the others still run (as in ``run_rules``)."""
    findings: list[Finding] = []
    skipped: dict[str, str] = {}
    for rule in RANK_RULES:
        try:
            reason = rule.skip(rctx)
            if reason is not None:
                skipped[rule.id] = reason
                continue
            findings.extend(rule.match(rctx))
        except Exception as exc:
            skipped[rule.id] = f"failed: {type(exc).__name__}: {exc}"
    findings.sort(key=lambda f: (-f.cost_us, f.rule))
    return findings, skipped
