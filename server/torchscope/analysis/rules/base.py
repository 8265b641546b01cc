"""The shape every rule has, after ``torch/profiler/_pattern_matcher.py`` (TorchTidy):
an id, a title, where its documentation and threshold come from, a skip condition that says
*why* the rule cannot judge this trace, and ``match`` returning findings.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, ClassVar

from ..index.context import Context
from ..index.source import lines_for_markers
from ..measure.stages import Metrics
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


class Rule(RuleBase, ABC):
    """One finding type over one trace. Subclasses set the class attributes and implement
    ``match``; ``skip`` says why the rule cannot judge a trace."""

    def skip(self, ctx: Context, measured: Metrics) -> str | None:
        """Why this rule cannot judge the trace (None: it can)."""
        del ctx, measured
        return None

    @abstractmethod
    def match(self, ctx: Context, measured: Metrics) -> list[Finding]:
        """All findings of this rule in the trace."""


class LinkedKernelRule(Rule):
    """A rule about kernels and the launch calls that issued them (needs correlation ids)."""

    def skip(self, ctx: Context, measured: Metrics) -> str | None:
        if not ctx.trace.kernels:
            return "no kernels recorded"
        if ctx.links.linked == 0:
            return "kernels are not linked to launches (no correlation ids)"
        return None
