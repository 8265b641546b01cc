"""Rules over an eager vs ``torch.compile`` comparison, the counterpart of :class:`.base.Rule`
for one trace: each has an id, a title, a README section, a skip reason and ``match``.

They run after the comparison's verdict (:func:`..compare.compare_runs`), on a
:class:`CompareContext`, only when both sides were measured.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Optional

from ...results import Finding, Report
from ...verdict.findings import RuleBase
from ..comparison import CompareSide, CompareVerdict, CompileMeta, CopyRow


@dataclass(frozen=True)
class CompareContext:
    """What a comparison rule reads: both sides, the verdict and what the compile added."""

    eager: CompareSide
    compiled: CompareSide
    compiled_report: Report
    added_copies: list[CopyRow]
    """Compiled copies with no eager counterpart (see ``compare.added_copies``)."""
    meta: CompileMeta
    verdict: CompareVerdict
    file: Optional[str]
    line: Optional[int]
    """Where the findings go: the profiled function's ``def``."""


class CompareRule(RuleBase, ABC):
    """One finding type of a comparison."""

    def skip(self, cctx: CompareContext) -> str | None:
        """Why this rule has nothing to say about the comparison (None: it may)."""
        del cctx
        return None

    @abstractmethod
    def match(self, cctx: CompareContext) -> list[Finding]:
        """All findings of this rule in the comparison."""

    def at_def(self, cctx: CompareContext, message: str, cost_us: float) -> Finding:
        """A finding on the compared function's ``def`` line."""
        return self.finding(message, cost_us, line=cctx.line, file=cctx.file)
