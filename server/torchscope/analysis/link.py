"""Link device work to the CPU call that caused it, and classify runtime calls.

Kineto gives every runtime call and every kernel/memcpy/memset it launched the same
``correlation`` id (the ``ac2g``/``async`` flow events repeat the same pairing, so they are
not read). Where a correlation is missing, the device event's ``External id`` names the CPU op
instead. Classification is by name, because ``cbid`` numbers differ between CUDA versions.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from itertools import compress, count, repeat
from operator import ge, itemgetter, not_

from ..ingest import Span, Trace

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
_MASK = (1 << 32) - 1


class Launched(Mapping[int, list[tuple[str, int]]]):
    """Runtime call → the device spans it launched, as (``kernel``/``memcpy``/``memset``,
    index), in that order of kinds and by index: the first as one code per runtime call in
    an array (kind << 32 | index; -1: none), the rest (a CUDA graph launch's) in a dict. A
    dict of lists of tuples took about 100 bytes per launch; this takes 8."""

    __slots__ = ("_first", "_more")

    def __init__(self, n_runtime: int) -> None:
        self._first = array("q", [-1]) * n_runtime
        self._more: dict[int, list[tuple[str, int]]] = {}

    def add(self, kind: int, rts: list[int], found: list[bool]) -> None:
        """Record the device spans of ``_LABELS[kind]`` whose runtime call was found."""
        first, more, label, base = self._first, self._more, _LABELS[kind], kind << 32
        for r, i in zip(compress(rts, found), compress(count(), found)):
            if first[r] < 0:
                first[r] = base + i
            else:
                more.setdefault(r, []).append((label, i))

    def __getitem__(self, r: int) -> list[tuple[str, int]]:
        code = self._first[r] if 0 <= r < len(self._first) else -1
        if code < 0:
            raise KeyError(r)
        return [(_LABELS[code >> 32], code & _MASK), *self._more.get(r, ())]

    def __iter__(self) -> Iterator[int]:
        return compress(count(), map(ge, self._first, repeat(0)))

    def __len__(self) -> int:
        return len(self._first) - self._first.count(-1)


@dataclass
class Links:
    """For each device span, the runtime call that launched it (-1 when unknown) and the
    CPU time it was issued at (used to put device work in the step whose code launched it)."""

    kernel_rt: list[int]
    memcpy_rt: list[int]
    memset_rt: list[int]
    kernel_issued: list[float]
    memcpy_issued: list[float]
    memset_issued: list[float]
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
    rt_device = Launched(len(runtime))
    linked = unlinked = 0
    out: dict[str, tuple[list[int], list[float]]] = {}
    starts = [*map(_START, runtime), float("nan")]
    for kind, (label, spans) in enumerate(
        zip(_LABELS, (trace.kernels, trace.memcpys, trace.memsets))
    ):
        dev_corrs = _correlations(spans)
        try:
            rts = list(map(rt_by_corr.get, dev_corrs, repeat(-1)))
        except TypeError:
            rts = [rt_by_corr.get(c, -1) if isinstance(c, (int, str)) else -1 for c in dev_corrs]
        issued = list(map(starts.__getitem__, rts))  # -1 (not linked) reads the nan
        found = list(map(ge, rts, repeat(0)))
        rt_device.add(kind, rts, found)
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
        rt_device=rt_device,
        linked=linked,
        unlinked=unlinked,
    )
