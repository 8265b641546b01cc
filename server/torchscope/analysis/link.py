"""Link device work to the CPU call that caused it, and classify runtime calls.

Kineto gives every runtime call and every kernel/memcpy/memset it launched the same
``correlation`` id (the ``ac2g``/``async`` flow events repeat the same pairing, so they are
not read). Where a correlation is missing, the device event's ``External id`` names the CPU op
instead. Classification is by name, because ``cbid`` numbers differ between CUDA versions.
"""

from __future__ import annotations

from array import array
from bisect import bisect_right
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from itertools import accumulate, chain, compress, count, repeat
from operator import ge, itemgetter, not_
from typing import Any, TypeVar, overload

from ..ingest import Span, Trace
from .groups import Groups

_START = itemgetter(0)
_CORRELATION = itemgetter(5)

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
        self._groups = Groups(n_runtime, list(chain.from_iterable(rts)))
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


def _correlations(spans: list[Span]) -> list[object]:
    return list(map(_CORRELATION, spans))


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
    corrs = _correlations(runtime)
    try:
        rt_by_corr: dict[object, int] = dict(zip(corrs, range(len(runtime))))
    except TypeError:  # an unhashable correlation value somewhere: keep the hashable ones
        rt_by_corr = {c: i for i, c in enumerate(corrs) if isinstance(c, (int, str))}
    rt_by_corr.pop(None, None)
    op_by_ext: dict[int, Span] | None = None
    linked = unlinked = 0
    out: dict[str, tuple[array[int], array[float]]] = {}
    starts = array("d", map(_START, runtime))
    starts.append(float("nan"))
    for label, spans in zip(_LABELS, (trace.kernels, trace.memcpys, trace.memsets)):
        dev_corrs = _correlations(spans)
        try:
            rts = array("q", map(rt_by_corr.get, dev_corrs, repeat(-1)))
        except TypeError:
            rts = array(
                "q", [rt_by_corr.get(c, -1) if isinstance(c, (int, str)) else -1 for c in dev_corrs]
            )
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
