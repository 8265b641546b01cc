"""How every finding is made, whatever its family reads (one trace: ``rules/``; a
comparison: ``multi/compile_rules/``; ranks: ``multi/rank_rules/``): an id, a title, where it
comes from, a docs section, and :meth:`RuleBase.finding` to stamp one. After
``torch/profiler/_pattern_matcher.py`` (TorchTidy). A finding judged by two families keeps its
words and thresholds here, once (``comm-heavy``).
"""

from __future__ import annotations

from typing import Any, ClassVar

from ..index.source import lines_for_markers
from ..results import Finding

#: The findings reference, relative to the repository root: one ``### <id>`` section per rule.
FINDINGS_DOC = "docs/findings.md"


class RuleBase:
    """What every rule has, whatever it reads: an id, a title, a source, a README section,
    and :meth:`finding` to stamp its findings."""

    id: ClassVar[str]
    title: ClassVar[str]
    severity: ClassVar[str] = "warning"
    source: ClassVar[str] = ""
    """Where the rule and its threshold come from (guide section, tool, docs)."""

    @property
    def docs_anchor(self) -> str:
        """Link target of the rule's section in the findings reference."""
        return f"{FINDINGS_DOC}#{self.id}"

    def finding(
        self,
        message: str,
        cost_us: float,
        *,
        line: int | None = None,
        file: str | None = None,
        severity: str | None = None,
        step: str | None = None,
        **details: Any,
    ) -> Finding:
        """A :class:`Finding` stamped with this rule's id, title and docs link; a line
        marker's name in ``message`` (``torchscope:L182``) reads ``line 182``."""
        return Finding(
            rule=self.id,
            severity=severity or self.severity,
            message=lines_for_markers(message),
            cost_us=max(0.0, float(cost_us)),
            line=line,
            file=file,
            title=self.title,
            docs=self.docs_anchor,
            step=step,
            # Times are floats on the wire, also where a legacy trace wrote whole µs.
            details={
                k: float(v) if k.endswith("_us") and isinstance(v, int) else v
                for k, v in details.items()
            },
        )


class CommHeavyFinding(RuleBase):
    """``comm-heavy``'s id, words and thresholds: judged over one trace's steps
    (``rules/comm_heavy.py``) and across the ranks of a run (``multi/rank_rules/comm_heavy.py``),
    with one threshold."""

    id = "comm-heavy"
    title = "Communication takes a large share of the step"
    severity = "information"
    source = "HolisticTraceAnalysis communication/computation overlap; DESIGN.md §3"

    SHARE: ClassVar[float] = 0.10
    """Communication ≥ 10 % of the step (DESIGN.md §3; HTA's comm/compute overlap analysis)."""

    WARNING_EXPOSED: ClassVar[float] = 0.10
    """Exposed (not overlapped) communication ≥ 10 % of the step turns it into a warning."""
