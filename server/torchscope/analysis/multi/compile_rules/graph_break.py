"""``graph-break``: Dynamo split the function into several graphs."""

from __future__ import annotations

from ...results import Finding
from .base import CompareContext, CompareRule

SHOWN_REASONS = 3


def short_reason(reason: str) -> str:
    """Dynamo's graph-break reason in one line: its first line, plus its ``Explanation:``
    line when it has one (torch ≥ 2.7 words reasons as a title, an explanation and hints)."""
    lines = [line.strip() for line in reason.strip().splitlines() if line.strip()]
    if not lines:
        return reason
    explanation = next((line for line in lines[1:] if line.startswith("Explanation:")), None)
    if explanation:
        return f"{lines[0]}: {explanation.removeprefix('Explanation:').strip()}"
    return lines[0]


class GraphBreak(CompareRule):
    id = "graph-break"
    title = "torch.compile split the function at graph breaks"
    severity = "information"
    source = "PyTorch torch.compile graph-break docs"

    def skip(self, cctx: CompareContext) -> str | None:
        return None if cctx.meta.graph_breaks else "no graph breaks"

    def match(self, cctx: CompareContext) -> list[Finding]:
        breaks = cctx.meta.graph_breaks
        reasons = "; ".join(short_reason(r) for r in breaks[:SHOWN_REASONS])
        extra = len(breaks) - SHOWN_REASONS
        more = f" (+{extra} more)" if extra > 0 else ""
        message = (
            f"torch.compile split the function at {len(breaks)} graph break "
            f"reason(s); the code between graphs runs eagerly: {reasons}{more}"
        )
        return [self.at_def(cctx, message, 0.0)]


RULE = GraphBreak()
