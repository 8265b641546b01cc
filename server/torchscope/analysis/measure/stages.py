"""Stage results: what one analysis stage hands to the next, immutable once made.

``engine.analyze`` runs the stages in order and passes each one's output explicitly:
``build_context`` (indexes over the trace) → :func:`metrics.measure` (:class:`Metrics`) →
``verdict.decide`` and the rules, which receive the context *and* the metrics. Nothing writes
into the :class:`~.context.Context` after it is built (its memoised columns are caches of the
trace, not results).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..results import StepMetrics, TopOp
from .efficiency import Efficiency

if TYPE_CHECKING:
    from .memory import MemoryAnalysis


@dataclass(frozen=True)
class Metrics:
    """The metrics stage's output: per-step numbers, the op table (with achieved rates),
    per-name call counts and the efficiency table (work, time and peaks per op)."""

    steps: tuple[StepMetrics, ...]
    top_ops: tuple[TopOp, ...]
    op_calls: Mapping[str, int]
    """Op name → calls inside the steps (rules use it to skip early)."""
    efficiency: Efficiency
    """FLOPs, bytes and time per op with recorded shapes, and the peaks (``efficiency``)."""
    memory: MemoryAnalysis | None = None
    """Per-line memory and peaks from the ``[memory]`` events (None: the trace has none)."""
