"""Small shared pieces of the metrics and the rules: the median, name classifiers, and columns
of the trace memoised on the :class:`Context` (start times, name numbers, top-level ops).

Per-item work runs in C (``map``, ``compress``, slices); see :mod:`.metrics`.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable, Sequence
from itertools import compress, repeat
from operator import eq, itemgetter
from typing import Any, TypeVar

from ...ingest import Span
from .context import Context

_NAME = itemgetter(2)
_T = TypeVar("_T")
DATALOADER = "enumerate(DataLoader)"

COMM_MARKERS = (
    "nccl",
    "rccl",
    "all_reduce",
    "allreduce",
    "all_gather",
    "allgather",
    "reduce_scatter",
    "all_to_all",
    "alltoall",
    "sendrecv",
)


_COMM_CACHE: dict[str, bool] = {}


def is_comm_kernel(name: str) -> bool:
    """A collective-communication kernel (NCCL/RCCL); memoised, kernel names repeat."""
    found = _COMM_CACHE.get(name)
    if found is None:
        low = name.lower()
        found = any(m in low for m in COMM_MARKERS)
        if len(_COMM_CACHE) < 100_000:
            _COMM_CACHE[name] = found
    return found


def median(values: Sequence[float]) -> float:
    """Median, 0.0 for no values (a step with nothing in it). The same arithmetic as
    :func:`statistics.median` (sort, middle or mean of the middle two) without its overhead:
    it runs once per step and per kernel name."""
    if not values:
        return 0.0
    ordered = sorted(values)
    half = len(ordered) // 2
    if len(ordered) % 2:
        return float(ordered[half])
    return float((ordered[half - 1] + ordered[half]) / 2)


def is_dataloader(name: str) -> bool:
    """The annotation DataLoader iteration writes (``enumerate(DataLoader)#…__next__``)."""
    return name.startswith(DATALOADER)


def all_linked(ctx: Context, rts: Sequence[int]) -> bool:
    """Every device span of one kind has its runtime call (the usual case); checked once."""
    return ctx.memo((id(rts), "metrics.all_linked"), lambda: min(rts, default=0) >= 0)


def column(ctx: Context, spans: list[Span], name: str) -> Any:
    """A per-list column cached on the context (``None`` until stored)."""
    return ctx.memoised((id(spans), name))


class Ids(dict[str, int]):
    """Name → a small integer, handed out on first lookup (so ``map`` can number names in C)."""

    def __missing__(self, name: str) -> int:
        found = self[name] = len(self)
        return found


def name_ids(ctx: Context, spans: list[Span]) -> tuple[list[int], list[str]]:
    """Per span of one of the trace's lists, a small number for its name, and the names by
    number (first seen first); built once. Later per-span tests index a list by number
    instead of hashing and comparing long kernel names again."""

    def make() -> tuple[list[int], list[str]]:
        ids = Ids()
        return list(map(ids.__getitem__, map(_NAME, spans))), list(ids)

    return ctx.memo((id(spans), "metrics.name_ids"), make)


class ByName(dict[str, _T]):
    """Name → ``of(name)``, worked out on the first lookup of each name. A trace repeats a
    few dozen names over tens of thousands of events, so ``map(by_name.__getitem__, names)``
    classifies every event in one pass in C with one call per distinct name."""

    def __init__(self, of: Callable[[str], _T]) -> None:
        super().__init__()
        self.of = of

    def __missing__(self, name: str) -> _T:
        found = self[name] = self.of(name)
        return found


def top_level(ctx: Context) -> array[int]:
    """Indices of the top-level ops (parent -1: no enclosing op), ascending; built once,
    shared by the step numbers and :class:`CpuIndex`."""
    parent = ctx.nest.op_parent  # (array.index takes no start before Python 3.10)
    return ctx.memo(
        (id(ctx.trace.ops), "metrics.top_level"),
        lambda: array("i", compress(range(len(parent)), map(eq, parent, repeat(-1)))),
    )
