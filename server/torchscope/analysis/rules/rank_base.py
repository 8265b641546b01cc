"""The shape of a cross-rank rule: the same as :class:`~.base.Rule` (id, title, severity,
docs anchor, skip reason, ``match``), judged over every rank's row instead of one trace.
Every finding names the rank it is about (``details["rank"]``; the JSON lifts it to the
finding's ``rank``)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, ClassVar

from ..rank_model import RankContext
from ..report import Finding
from .base import FINDINGS_DOC


class RankRule(ABC):
    """One cross-rank finding type."""

    id: ClassVar[str]
    title: ClassVar[str]
    severity: ClassVar[str] = "warning"
    source: ClassVar[str] = ""

    @property
    def docs_anchor(self) -> str:
        """Link target of the rule's section in the findings reference."""
        return f"{FINDINGS_DOC}#{self.id}"

    def skip(self, rctx: RankContext) -> str | None:
        """Why this rule cannot judge these ranks (None: it can)."""
        if len(rctx.ranks) < 2:
            return "only one rank"
        return None

    @abstractmethod
    def match(self, rctx: RankContext) -> list[Finding]:
        """All findings of this rule across the ranks."""

    def finding(
        self, rank: int, message: str, cost_us: float, severity: str | None = None, **details: Any
    ) -> Finding:
        """A :class:`Finding` about ``rank``, stamped with this rule's id, title and docs."""
        return Finding(
            rule=self.id,
            severity=severity or self.severity,
            message=message,
            cost_us=max(0.0, float(cost_us)),
            title=self.title,
            docs=self.docs_anchor,
            details={"rank": rank, **{k: float(v) for k, v in details.items()}},
        )
