"""The shape every rule has, after ``torch/profiler/_pattern_matcher.py`` (TorchTidy):
an id, a title, where its documentation and threshold come from, a skip condition that says
*why* the rule cannot judge this trace, and ``match`` returning findings.
"""

from __future__ import annotations

from abc import ABC, abstractmethod

from ..index.context import Context
from ..measure.stages import Metrics
from ..results import Finding
from ..verdict.findings import RuleBase


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
