"""Union of device intervals and queries on it: busy time and idle gaps inside a window.

Device busy time is the union of kernel, memcpy and memset intervals on a device, so work
overlapping on two streams counts once. The union is built once per device (one sort) and
every per-step or per-annotation query is a binary search plus a walk over the intervals that
fall inside the window.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Iterable
from operator import itemgetter, sub

_FIRST = itemgetter(0)


class Timeline:
    """Disjoint, sorted busy intervals of one device."""

    __slots__ = ("ends", "starts")

    def __init__(self, intervals: Iterable[tuple[float, float]]) -> None:
        starts: list[float] = []
        ends: list[float] = []
        for s, e in sorted(intervals, key=_FIRST):
            if ends and s <= ends[-1]:
                if e > ends[-1]:
                    ends[-1] = e
            else:
                starts.append(s)
                ends.append(e)
        self.starts = starts
        self.ends = ends

    def __len__(self) -> int:
        return len(self.starts)

    def busy(self, a: float, b: float) -> float:
        """Busy time inside ``[a, b]``: slice sums in C, clipped at both edges."""
        starts, ends = self.starts, self.ends
        i = bisect_right(ends, a)
        j = bisect_left(starts, b, i)
        if j <= i:
            return 0.0
        # Per-interval differences, not sum(ends) - sum(starts): absolute timestamps are
        # ~1.7e15 µs, and sums of thousands of them lose whole microseconds.
        total = sum(map(sub, ends[i:j], starts[i:j]))
        if starts[i] < a:
            total -= a - starts[i]
        if ends[j - 1] > b:
            total -= ends[j - 1] - b
        return max(0.0, float(total))

    def gaps(self, a: float, b: float) -> list[tuple[float, float]]:
        """Idle stretches inside ``[a, b]``, including those at its edges."""
        starts, ends = self.starts, self.ends
        i = bisect_right(ends, a)
        j = bisect_left(starts, b, i)
        if j <= i:
            return [(a, b)] if b > a else []
        out = [(e, s) for e, s in zip(ends[i : j - 1], starts[i + 1 : j]) if s > e]
        if starts[i] > a:
            out.insert(0, (a, starts[i]))
        if ends[j - 1] < b:
            out.append((ends[j - 1], b))
        return out
