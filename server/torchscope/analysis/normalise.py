"""One pass over the raw events: keep what the analysis reads, in µs floats, split by kind.

Every trace variant torch has written since 1.8 is folded into one shape here, so no later
stage has to know about formats:

- legacy 2021 categories (``Operator``, ``Runtime``, ``Kernel``, ``Memcpy``, ``Memset``) map to
  today's; legacy ``Operator`` events that are really ``record_function`` annotations
  (``ProfilerStep#N``, ``enumerate(DataLoader)…``, ``Optimizer.step#…``, ``## … ##``) become
  annotations, because that is what newer torch calls them;
- string tids (``"24572"``, ``"stream 7"``) and string or missing device/stream ids;
- ``ts`` is always microseconds in Kineto output, also under ``displayTimeUnit: ns`` (that key
  only changes how viewers *display* time) and also when ``ts`` is relative to
  ``baseTimeNanoseconds``: analysis only uses differences, so both are taken as they are;
- ``deviceProperties`` and the older ``computeProperties``.

Events with missing or ill-typed fields are skipped and counted, never fatal: a trace that
parses as JSON is always analysed as far as its contents allow.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from operator import itemgetter
from typing import Any

from .errors import TraceError
from .model import DeviceProps, Span, Trace, Track
from .parse import load_raw, load_raw_bytes

# Kinds, as indices into the per-kind lists built below.
_OP, _ANN, _PY, _RT, _KERNEL, _MEMCPY, _MEMSET, _GPU_ANN, _GPU_SYNC, _RANGE, _OVERHEAD, _SPAN = (
    range(12)
)
_DEVICE_KINDS = frozenset({_KERNEL, _MEMCPY, _MEMSET, _GPU_ANN, _GPU_SYNC, _RANGE})

_CATEGORY_KIND: dict[str, int] = {
    "cpu_op": _OP,
    "Operator": _OP,  # legacy; annotations are split off by name below
    "operator": _OP,
    "user_annotation": _ANN,
    "python_function": _PY,
    "cuda_runtime": _RT,
    "Runtime": _RT,
    "runtime": _RT,
    "cuda_driver": _RT,  # cuLaunchKernel (Triton, some cuBLAS paths)
    "xpu_runtime": _RT,
    "privateuse1_runtime": _RT,
    "kernel": _KERNEL,
    "Kernel": _KERNEL,
    "gpu_memcpy": _MEMCPY,
    "Memcpy": _MEMCPY,
    "gpu_memset": _MEMSET,
    "Memset": _MEMSET,
    "gpu_user_annotation": _GPU_ANN,
    "cuda_sync": _GPU_SYNC,
    "cuda_profiler_range": _RANGE,
    "overhead": _OVERHEAD,
    "Overhead": _OVERHEAD,
    "Trace": _SPAN,
}

LEGACY_CATEGORIES = frozenset({"Operator", "Runtime", "Kernel", "Memcpy", "Memset"})

ANNOTATION_PREFIXES = (
    "ProfilerStep#",
    "enumerate(DataLoader)",
    "Optimizer.",
    "## ",
    "torchscope:",
    "[param|",
    "nccl:",
)
"""Names that ``record_function`` produced and legacy traces filed under ``Operator``."""

LINE_MARKER_PREFIX = "torchscope:L"
"""The worker's per-line markers; recorded as ``cpu_op`` but annotations, not ops."""

PROFILER_OVERHEAD_NAMES = frozenset(
    {
        "Activity Buffer Request",
        "CUPTI Overhead",
        "Buffer Request",
        "Buffer Flush",
        "Command Buffer Full",
        "UVM Activity Init",
    }
)
"""CUPTI overhead kinds (``CUpti_ActivityOverheadKind``) Kineto exports under category
``overhead``; matched by name too, in case a version files them elsewhere."""


_START = itemgetter(0)


def _origin(events: Iterable[Any]) -> float:
    """The first event's timestamp, subtracted from all: Kineto writes absolute epoch µs
    (~1.7e15, where a float64 resolves only 0.25 µs) in older traces, and durations of
    1-2 µs kernels must survive ``end - start``."""
    for e in events:
        ts = e.get("ts") if isinstance(e, dict) else None
        if isinstance(ts, (int, float)) and not isinstance(ts, bool) and -1e18 < ts < 1e18:
            return ts
    return 0


def _int_or(value: object, default: int) -> int:
    if isinstance(value, bool):
        return default
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str):
        digits = value.rsplit(" ", 1)[-1].strip()
        if digits.lstrip("-").isdigit():
            return int(digits)
    return default


def _devices(meta: dict[str, Any]) -> list[DeviceProps]:
    props = meta.get("deviceProperties")
    if not props:
        props = meta.get("computeProperties")
    out: list[DeviceProps] = []
    if not isinstance(props, list):
        return out
    for i, p in enumerate(props):
        if not isinstance(p, dict):
            continue
        major = p.get("major", p.get("computeMajor"))
        minor = p.get("minor", p.get("computeMinor"))
        cc = f"{major}.{minor}" if isinstance(major, int) and isinstance(minor, int) else None
        sms = p.get("multiProcessorCount", p.get("numSms"))
        mem = p.get("totalGlobalMem")
        out.append(
            DeviceProps(
                index=_int_or(p.get("id"), i),
                name=str(p.get("name") or f"device {i}"),
                sm_count=sms if isinstance(sms, int) else None,
                compute_capability=cc,
                memory_bytes=mem if isinstance(mem, int) else None,
            )
        )
    return out


def normalise(path: str, meta: dict[str, Any], events: list[Any]) -> Trace:
    """Split raw events by kind into :class:`Span` lists (the single hot loop)."""
    lists: list[list[Span]] = [[] for _ in range(12)]
    appends = [lst.append for lst in lists]
    track_ids: dict[tuple[object, object], int] = {}
    track_kinds: list[int] = []
    track_keys: list[tuple[object, object]] = []
    track_first_args: list[Any] = []
    thread_names: dict[tuple[object, object], str] = {}
    kind_of = _CATEGORY_KIND.get
    legacy = False
    skipped = 0
    ann_prefixes = ANNOTATION_PREFIXES
    marker = LINE_MARKER_PREFIX
    empty: dict[str, Any] = {}

    origin = _origin(events)
    new = tuple.__new__  # Span(...) without the Python-level NamedTuple.__new__ frame
    legacy_cats = LEGACY_CATEGORIES
    overhead_names = PROFILER_OVERHEAD_NAMES
    # The track of the previous event: most events continue their thread's run.
    last_pid: object = None
    last_tid: object = None
    last_track = -1
    for e in events:
        try:
            ph = e["ph"]
            if ph != "X":
                if ph == "M" and e.get("name") == "thread_name":
                    a = e.get("args")
                    if isinstance(a, dict) and isinstance(a.get("name"), str):
                        thread_names[(e.get("pid"), e.get("tid"))] = a["name"]
                continue
            cat = e["cat"]
            kind = kind_of(cat)
            if kind is None:
                continue
            name = e["name"]
            start = e["ts"] - origin
            try:
                end = start + e["dur"]
            except KeyError:
                end = start + 0.0
            try:
                args = e["args"]
            except KeyError:
                args = empty
            # The chained comparison also rejects strings, None and NaN in ts/dur.
            if (
                not -1e18 < start <= end < 1e18
                or name.__class__ is not str
                or args.__class__ is not dict
            ):
                if args is None and name.__class__ is str and -1e18 < start <= end < 1e18:
                    args = empty
                else:
                    skipped += 1
                    continue
            if kind == _OP:
                if cat in legacy_cats:
                    legacy = True
                    if name.startswith(ann_prefixes):
                        kind = _ANN
                elif name.startswith(marker):
                    kind = _ANN  # the worker's line markers (_RecordFunctionFast records cpu_op)
            elif cat in legacy_cats:
                legacy = True
            if name in overhead_names:
                kind = _OVERHEAD
            pid = e.get("pid")
            tid = e.get("tid")
            if tid == last_tid and pid == last_pid and last_track >= 0:
                track = last_track
            else:
                key = (pid, tid)
                found = track_ids.get(key)
                if found is None:
                    found = track_ids[key] = len(track_keys)
                    track_keys.append(key)
                    track_kinds.append(kind)
                    track_first_args.append(args)
                track = last_track = found
                last_pid, last_tid = pid, tid
            # ts/dur stay ints where Kineto wrote ints (exact, and no float() per event).
            appends[kind](new(Span, (start, end, name, track, args)))
        except (KeyError, TypeError, ValueError, AttributeError, OverflowError):
            # A missing field, a wrong type, an unhashable pid/tid or category: not an event
            # we can place; counted, never fatal.
            skipped += 1

    # Every list sorted by start: step membership becomes one slice per step, and the
    # per-thread sweeps get nearly sorted input. Kineto writes each thread in time order,
    # so this is a merge of sorted runs.
    for lst in lists:
        lst.sort(key=_START)

    tracks: list[Track] = []
    for (pid, tid), kind, args in zip(track_keys, track_kinds, track_first_args):
        if kind in _DEVICE_KINDS:
            device = _int_or(args.get("device"), _int_or(pid, 0))
            stream = _int_or(args.get("stream"), _int_or(tid, 0))
            tracks.append(Track(pid, tid, device, stream))
        else:
            tracks.append(Track(pid, tid, -1, -1))
    names = {track_ids[k]: v for k, v in thread_names.items() if k in track_ids}

    trace = Trace(
        path=path,
        meta=meta,
        ops=lists[_OP],
        annotations=lists[_ANN],
        python=lists[_PY],
        runtime=lists[_RT],
        kernels=lists[_KERNEL],
        memcpys=lists[_MEMCPY],
        memsets=lists[_MEMSET],
        gpu_annotations=lists[_GPU_ANN],
        gpu_syncs=lists[_GPU_SYNC],
        profiler_ranges=lists[_RANGE],
        overhead=lists[_OVERHEAD],
        trace_spans=lists[_SPAN],
        tracks=tracks,
        devices=_devices(meta),
        thread_names=names,
        legacy=legacy,
        skipped_events=skipped,
    )
    recognised = sum(len(x) for i, x in enumerate(lists) if i != _SPAN)
    if recognised == 0:
        raise TraceError(
            f"{path}: not a PyTorch profiler trace, or one that recorded nothing: none of its "
            f"events has a Kineto category (cpu_op, user_annotation, kernel, cuda_runtime, …); "
            "check that the profiled code ran inside the profiler's active steps"
        )
    return trace


def load_trace(path: str | os.PathLike[str]) -> Trace:
    """Read and normalise one trace file (``.json`` or ``.json.gz``)."""
    name = os.fspath(path)
    meta, events = load_raw(name)
    return normalise(name, meta, events)


def load_trace_bytes(name: str, data: bytes) -> Trace:
    """Read and normalise a trace held in memory (``name`` is used in messages only)."""
    meta, events = load_raw_bytes(name, data)
    return normalise(name, meta, events)
