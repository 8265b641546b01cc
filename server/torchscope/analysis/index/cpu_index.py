"""What was the CPU doing at time t: gap labels and the source line under a device gap."""

from __future__ import annotations

from array import array
from bisect import bisect_right
from itertools import accumulate, compress, repeat
from operator import itemgetter, not_

from ...ingest import Span
from .columns import top_level
from .context import Context

_START = itemgetter(0)
_END = itemgetter(1)
_NAME = itemgetter(2)


class CpuIndex:
    """Answers "what was the CPU doing at time t?" for gap labels in O(log n)."""

    LOOKBACK = 64
    """Top-level ops scanned backwards from t (threads interleave, so the op covering t is
    among the last few that started before it)."""

    def __init__(self, ctx: Context) -> None:
        anns = ctx.trace.annotations  # sorted by start
        steps = map(str.startswith, map(_NAME, anns), repeat("ProfilerStep#"))
        keep = map(not_, steps)
        self.ann_index = array("i", compress(range(len(anns)), keep))
        self.annotations = list(map(anns.__getitem__, self.ann_index))
        self.ann_starts = array("d", map(_START, self.annotations))
        # reach[j]: the latest end among annotations 0..j, to stop scanning back early.
        self.reach = array("d", accumulate(map(_END, self.annotations), max))
        self.op_index = top_level(ctx)  # shared, never changed
        self.op_starts = array("d", map(ctx.starts(ctx.trace.ops).__getitem__, self.op_index))
        self._all_ops = ctx.trace.ops  # sorted by start
        self._ops: list[Span] | None = None

    @property
    def ops(self) -> list[Span]:
        """The top-level ops (built on first use: lookups read the trace's list directly)."""
        if self._ops is None:
            self._ops = list(map(self._all_ops.__getitem__, self.op_index))
        return self._ops

    def at(self, t: float) -> str | None:
        """The innermost annotation (else top-level op) running at ``t``; step annotations
        are skipped: they contain everything and explain nothing."""
        found = self.locate(t)
        return found[0] if found else None

    def locate(self, t: float) -> tuple[str, str, int] | None:
        """Like :meth:`at`, with the kind (``annotation``/``op``) and index into the trace.

        Nested annotations start later than those around them, so the innermost one holding
        ``t`` is the latest-starting one that has not ended by ``t``."""
        j = bisect_right(self.ann_starts, t) - 1
        while j >= 0 and self.reach[j] > t:
            a = self.annotations[j]
            if t < a.end:
                return a.name, "annotation", self.ann_index[j]
            j -= 1
        k = bisect_right(self.op_starts, t) - 1
        stop = max(-1, k - self.LOOKBACK)
        while k > stop:
            op = self._all_ops[self.op_index[k]]
            if t < op.end:
                return op.name, "op", self.op_index[k]
            k -= 1
        return None

    def source(self, ctx: Context, t: float) -> tuple[str | None, int | None]:
        """Source file and line of what the CPU ran at ``t``."""
        found = self.locate(t)
        if found is None:
            return None, None
        _, kind, i = found
        return ctx.sources.of_annotation(i) if kind == "annotation" else ctx.sources.of_op(i)


def cpu_index(ctx: Context) -> CpuIndex:
    """The context's :class:`CpuIndex`, built once."""
    return ctx.memo("cpu_index", lambda: CpuIndex(ctx))
