"""The shape of a cross-rank rule: the same as :class:`~.base.Rule` (id, title, severity,
docs anchor, skip reason, ``match``), judged over every rank's row instead of one trace.
Every finding names the rank it is about (``details["rank"]``; the JSON lifts it to the
finding's ``rank``)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from ...results import Finding
from ...verdict.findings import RuleBase

if TYPE_CHECKING:  # only annotations: analysing one trace never imports rank_model
    from ..rank_model import RankContext


class RankRule(RuleBase, ABC):
    """One cross-rank finding type: :class:`~.base.RuleBase`'s id, title, docs and sources,
    judged over a :class:`RankContext`."""

    def skip(self, rctx: RankContext) -> str | None:
        """Why this rule cannot judge these ranks (None: it can)."""
        if len(rctx.ranks) < 2:
            return "only one rank"
        return None

    @abstractmethod
    def match(self, rctx: RankContext) -> list[Finding]:
        """All findings of this rule across the ranks."""

    def rank_finding(
        self, rank: int, message: str, cost_us: float, severity: str | None = None, **details: Any
    ) -> Finding:
        """A :class:`Finding` about ``rank`` (``details["rank"]``, the numbers as floats)."""
        numbers = {k: float(v) for k, v in details.items()}
        found = self.finding(message, cost_us, severity=severity)
        return replace(found, details={"rank": rank, **numbers})
