"""Union of device intervals and queries on it: busy time and idle gaps inside a window.

Device busy time is the union of kernel, memcpy and memset intervals on a device, so work
overlapping on two streams counts once. The union is built once per device (one sort) and
every per-step or per-annotation query is a binary search plus a walk over the intervals that
fall inside the window.
"""

from __future__ import annotations

from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Sequence
from heapq import nlargest
from itertools import compress, repeat
from operator import gt, itemgetter, le, lt, sub

from ...ingest import accel

_FIRST = itemgetter(0)
_SECOND = itemgetter(1)


def _merge(pairs: Iterable[tuple[float, float]]) -> tuple[list[float], list[float]]:
    """Starts and ends of the union of ``(start, end)`` pairs sorted by start: one pass that
    keeps the open interval in locals. Touching intervals merge. In C where the extension is
    built (``_native_merge.c``: the same comparisons, the same objects)."""
    native = accel.native
    if native is not None:
        merged: tuple[list[float], list[float]] = native.merge(pairs)
        return merged
    return _merge_python(pairs)


def _merge_python(pairs: Iterable[tuple[float, float]]) -> tuple[list[float], list[float]]:
    """:func:`_merge`'s Python twin."""
    starts: list[float] = []
    ends: list[float] = []
    it = iter(pairs)
    first = next(it, None)
    if first is None:
        return starts, ends
    lo, hi = first
    for s, e in it:
        if s <= hi:
            if e > hi:
                hi = e
        else:
            starts.append(lo)
            ends.append(hi)
            lo, hi = s, e
    starts.append(lo)
    ends.append(hi)
    return starts, ends


def union_length(intervals: Iterable[tuple[float, float]]) -> float:
    """Length of the union of ``(start, end)`` pairs sorted by start (what
    :meth:`Timeline.from_sorted` would hold, summed interval by interval)."""
    starts, ends = _merge(intervals)
    return float(sum(map(sub, ends, starts)))


def _largest(values: list[float], n: int) -> list[int]:
    """Positions of the ``n`` largest values, largest first and earlier first among equals:
    ``nlargest(n, range(len(values)), key=values.__getitem__)``, but the n-th largest value
    picks the candidates in C and only those few are sorted."""
    if n <= 0 or not values:
        return []
    bound = nlargest(n, values)[-1]
    candidates = list(compress(range(len(values)), map(le, repeat(bound), values)))
    return sorted(candidates, key=values.__getitem__, reverse=True)[:n]


class Timeline:
    """Disjoint, sorted busy intervals of one device, as two columns of doubles (8 bytes an
    edge: a device's timeline has about one interval per kernel)."""

    __slots__ = ("ends", "starts")

    def __init__(self, intervals: Iterable[tuple[float, float]]) -> None:
        self._set(*_merge(sorted(intervals, key=_FIRST)))

    def _set(self, starts: Iterable[float], ends: Iterable[float]) -> None:
        self.starts = array("d", starts)
        self.ends = array("d", ends)

    @classmethod
    def from_sorted(cls, intervals: Iterable[tuple[float, float]]) -> Timeline:
        """The same union from intervals already sorted by start (skips the sort)."""
        timeline = cls.__new__(cls)
        timeline._set(*_merge(intervals))
        return timeline

    @classmethod
    def from_columns(cls, starts: Sequence[float], ends: Sequence[float]) -> Timeline:
        """The same union from start and end columns sorted by start, without a (start, end)
        tuple per interval. Where no interval ends before the one ahead of it (the usual
        case: one stream, or streams taking turns) the merge is a few passes in C."""
        timeline = cls.__new__(cls)
        if not any(map(gt, ends, ends[1:])):
            # Ends never decrease: interval i opens a stretch when it starts after the end
            # of interval i - 1, and a stretch ends where its last interval ends.
            opens = [True, *map(gt, starts[1:], ends)]
            timeline._set(compress(starts, opens), [*compress(ends, opens[1:]), *ends[-1:]])
        else:
            timeline._set(*_merge(zip(starts, ends)))
        return timeline

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
        before, after = ends[i : j - 1], starts[i + 1 : j]
        out = list(compress(zip(before, after), map(lt, before, after)))
        if starts[i] > a:
            out.insert(0, (a, starts[i]))
        if ends[j - 1] < b:
            out.append((ends[j - 1], b))
        return out

    def largest_gaps(self, a: float, b: float, n: int) -> list[tuple[float, float]]:
        """The ``n`` longest of :meth:`gaps` (by ``end - start``), longest first and earlier
        first among equals. Ranks the lengths straight from the columns: a step has thousands
        of gaps and the report keeps a few."""
        starts, ends = self.starts, self.ends
        i = bisect_right(ends, a)
        j = bisect_left(starts, b, i)
        if j > i:
            before, after = ends[i : j - 1], starts[i + 1 : j]
            if all(map(lt, before, after)):  # every inner gap kept, as a merged union has
                head = [starts[i] - a] if starts[i] > a else []
                tail = [b - ends[j - 1]] if ends[j - 1] < b else []
                out: list[tuple[float, float]] = []
                for p in _largest([*head, *map(sub, after, before), *tail], n):
                    if head and p == 0:
                        out.append((a, starts[i]))
                    elif p - len(head) < len(before):
                        q = i + p - len(head)
                        out.append((ends[q], starts[q + 1]))
                    else:
                        out.append((ends[j - 1], b))
                return out
        gaps = self.gaps(a, b)
        lengths = list(map(sub, map(_SECOND, gaps), map(_FIRST, gaps)))
        return [gaps[p] for p in _largest(lengths, n)]
