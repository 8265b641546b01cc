"""Link device work to the CPU call that caused it, and classify runtime calls.

Kineto gives every runtime call and every kernel/memcpy/memset it launched the same
``correlation`` id (the ``ac2g``/``async`` flow events repeat the same pairing, so they are
not read). Where a correlation is missing, the device event's ``External id`` names the CPU op
instead. Classification is by name, because ``cbid`` numbers differ between CUDA versions.
"""

from __future__ import annotations

from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Iterator, Mapping, Sequence
from contextlib import suppress
from dataclasses import dataclass
from itertools import accumulate, chain, compress, count, repeat
from operator import ge, gt, itemgetter, ne, not_
from typing import Any, TypeVar, overload

from ...ingest import Span, Trace
from .groups import Groups

_START = itemgetter(0)
_CORRELATION = itemgetter(5)
_KEYS = (int, float, str)
"""The correlation values that can match (what a JSON id can be, less null)."""
_NOTHING = object()
"""Equal to no id."""

LAUNCH_CALLS = frozenset(
    {
        "cudaLaunchKernel",
        "cudaLaunchKernelExC",
        "cudaLaunchCooperativeKernel",
        "cudaLaunchCooperativeKernelMultiDevice",
        "cudaGraphLaunch",
        "cuLaunchKernel",
        "cuLaunchKernelEx",
        "cuLaunchCooperativeKernel",
        "cuGraphLaunch",
        "hipLaunchKernel",
        "hipExtLaunchKernel",
        "hipModuleLaunchKernel",
        "hipGraphLaunch",
    }
)
SYNC_CALLS = frozenset(
    {
        "cudaDeviceSynchronize",
        "cudaStreamSynchronize",
        "cudaEventSynchronize",
        "cuCtxSynchronize",
        "cuStreamSynchronize",
        "cuEventSynchronize",
        "hipDeviceSynchronize",
        "hipStreamSynchronize",
        "hipEventSynchronize",
    }
)
"""Calls that block the CPU until the device catches up (Nsight's ``cuda_api_sync`` list)."""

BLOCKING_COPY_CALLS = frozenset(
    {"cudaMemcpy", "cuMemcpy", "cuMemcpyDtoH_v2", "cuMemcpyHtoD_v2", "hipMemcpy"}
)
"""Copy calls that are synchronous by definition (no ``Async``)."""


def is_launch(name: str) -> bool:
    """A call that puts a kernel (or a CUDA graph of kernels) on a stream."""
    return name in LAUNCH_CALLS or name.startswith(("cudaLaunch", "cuLaunch", "hipLaunch"))


def is_copy_call(name: str) -> bool:
    """A runtime call that enqueues (or performs) a memcpy."""
    return name.startswith(("cudaMemcpy", "cuMemcpy", "hipMemcpy"))


def copy_kind(name: str) -> str:
    """``HtoD``, ``DtoH``, ``DtoD``, ``HtoH``, ``PtoP`` from a ``Memcpy XtoY (…)`` name."""
    parts = name.split()
    return parts[1] if len(parts) > 1 and parts[0] == "Memcpy" else "other"


def is_pageable(name: str) -> bool:
    """The copy involves pageable (not pinned) host memory, which makes it synchronous."""
    return "Pageable" in name


_LABELS = ("kernel", "memcpy", "memset")
_T = TypeVar("_T")


class Launched(Mapping[int, list[tuple[str, int]]]):
    """Runtime call → the device spans it launched, as (``kernel``/``memcpy``/``memset``,
    index), kernels first, each kind by index: :class:`~.groups.Groups` over the three kinds'
    runtime columns end to end (a dict of lists of tuples took ~100 bytes a launch)."""

    __slots__ = ("_ends", "_groups")

    def __init__(self, n_runtime: int, rts: Sequence[Sequence[int]]) -> None:
        self._groups = Groups(n_runtime, array("q", chain.from_iterable(rts)))
        self._ends = list(accumulate(map(len, rts)))

    def _decode(self, position: int) -> tuple[str, int]:
        kind = bisect_right(self._ends, position)
        return _LABELS[kind], position - (self._ends[kind - 1] if kind else 0)

    def __getitem__(self, r: int) -> list[tuple[str, int]]:
        return list(map(self._decode, self._groups[r]))

    @overload
    def get(self, r: int, /) -> list[tuple[str, int]] | None: ...
    @overload
    def get(self, r: int, default: list[tuple[str, int]] | _T, /) -> list[tuple[str, int]] | _T: ...
    def get(self, r: int, default: Any = None, /) -> Any:  # not Mapping.get's try/except
        found = self._groups.get(r)
        return default if found is None else list(map(self._decode, found))

    def __iter__(self) -> Iterator[int]:
        return iter(self._groups)

    def __len__(self) -> int:
        return len(self._groups)

    def __contains__(self, r: object) -> bool:
        return r in self._groups


@dataclass
class Links:
    """For each device span, the runtime call that launched it (-1 when unknown) and the
    CPU time it was issued at (used to put device work in the step whose code launched it)."""

    kernel_rt: array[int]
    memcpy_rt: array[int]
    memset_rt: array[int]
    kernel_issued: array[float]
    memcpy_issued: array[float]
    memset_issued: array[float]
    rt_device: Launched
    """Runtime call → the device spans it launched, as (``kernel``/``memcpy``/``memset``, index)."""
    linked: int
    unlinked: int


def _ext(args: object) -> int | None:
    if not isinstance(args, Mapping):
        return None
    c = args.get("External id", args.get("external id"))
    return c if isinstance(c, int) and not isinstance(c, bool) else None


class _ByCorrelation:
    """Correlation id → index of the (last) runtime call carrying it, without a dict of every
    call: Kineto numbers calls in launch order, so the calls whose id is above every earlier
    one form an ascending run, searched by bisection (a list of ids, and their positions
    unless the run is every call; a dict took ~150 bytes a call more). The few others
    (threads interleaving, repeated ids, ids of mixed types) go to a dict, which wins a
    lookup: its call came later."""

    __slots__ = ("_extra", "_idx", "_n", "_run")

    def __init__(self, runtime: Sequence[Span]) -> None:
        n = len(runtime)
        corrs = list(map(_CORRELATION, runtime))
        in_run = [False] * n  # ids that are not all numbers or strings: all by dict
        if all(map(isinstance, corrs, repeat(_KEYS))):
            with suppress(TypeError):  # numbers and strings mixed: all by dict
                in_run = [True, *map(gt, corrs[1:], accumulate(corrs, max))] if n else []
        self._run = list(compress(corrs, in_run))
        self._n = len(self._run)
        self._idx = None
        if self._n != n:
            self._idx = array("q", compress(range(n), in_run))
            self._idx.append(-1)  # what the run's end reads
        self._run.append(_NOTHING)  # a bisection past the run reads a miss
        self._extra: dict[object, int] = {}
        for i in compress(range(n), map(not_, in_run)):
            c = corrs[i]
            if isinstance(c, _KEYS):
                self._extra[c] = i

    def _at(self, position: int) -> int:
        return position if self._idx is None else self._idx[position]

    def _one(self, c: object) -> int:
        if not isinstance(c, _KEYS):
            return -1
        found = self._extra.get(c)
        if found is not None:
            return found
        try:
            at = bisect_left(self._run, c, 0, self._n)
        except TypeError:  # an id of another type than the run's
            return -1
        return self._at(at) if self._run[at] == c else -1

    def lookup(self, spans: Sequence[Span]) -> array[int]:
        """Per span, the runtime call with its correlation (-1: none). The bisections run
        as ``map`` in C; only misses and the dict's ids take a second, per-item look."""
        corrs = list(map(_CORRELATION, spans))
        try:
            at = array("q", map(bisect_left, repeat(self._run), corrs, repeat(0), repeat(self._n)))
        except TypeError:  # a missing or odd id somewhere: one at a time
            return array("q", map(self._one, corrs))
        rts = at if self._idx is None else array("q", map(self._idx.__getitem__, at))
        for i in compress(count(), map(ne, map(self._run.__getitem__, at), corrs)):
            rts[i] = -1
        if self._extra:
            try:
                hits = list(compress(count(), map(self._extra.__contains__, corrs)))
            except TypeError:  # an unhashable id (a JSON list or object): one at a time
                return array("q", map(self._one, corrs))
            for i in hits:
                rts[i] = self._extra[corrs[i]]
        return rts


def _ops_by_ext(trace: Trace) -> dict[int, Span]:
    """Ops by their ``External id`` (read only when some device span has no correlation)."""
    out: dict[int, Span] = {}
    for o in trace.ops:
        oe = _ext(o.args)
        if oe is not None:
            out[oe] = o
    return out


def link(trace: Trace) -> Links:
    """Match device spans to runtime calls by correlation id, else to ops by External id.

    The lookups run as ``map`` over whole lists (in C); the per-item Python loop only runs
    for the few spans that need a second look (no correlation, or an unhashable one)."""
    runtime = trace.runtime
    by_corr = _ByCorrelation(runtime)
    op_by_ext: dict[int, Span] | None = None
    linked = unlinked = 0
    out: dict[str, tuple[array[int], array[float]]] = {}
    starts = array("d", map(_START, runtime))
    starts.append(float("nan"))
    for label, spans in zip(_LABELS, (trace.kernels, trace.memcpys, trace.memsets)):
        rts = by_corr.lookup(spans)
        issued = array("d", map(starts.__getitem__, rts))  # -1 (not linked) reads the nan
        found = list(map(ge, rts, repeat(0)))
        linked += found.count(True)
        for i in compress(count(), map(not_, found)):
            e = _ext(spans[i].args)
            if e is not None:
                if op_by_ext is None:
                    op_by_ext = _ops_by_ext(trace)
                op = op_by_ext.get(e)
                if op is not None:
                    issued[i] = op.start
                    linked += 1
                    continue
            unlinked += 1
        out[label] = (rts, issued)
    return Links(
        kernel_rt=out["kernel"][0],
        memcpy_rt=out["memcpy"][0],
        memset_rt=out["memset"][0],
        kernel_issued=out["kernel"][1],
        memcpy_issued=out["memcpy"][1],
        memset_issued=out["memset"][1],
        rt_device=Launched(len(runtime), [out[label][0] for label in _LABELS]),
        linked=linked,
        unlinked=unlinked,
    )
