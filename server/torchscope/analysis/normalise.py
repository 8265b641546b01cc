"""One pass over the raw events, made while the JSON is parsed: keep what the analysis reads.

(``load.py`` picks which reader fills the sink: the streaming scan, the whole-buffer one
in C or msgspec (``fastload``, the fast twin of this logic), or the stdlib parser's hook
here.)

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

from collections.abc import Callable
from operator import itemgetter
from typing import Any

from .errors import TraceError
from .model import DeviceProps, MemoryEvent, Span, Trace, Track

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
"""The worker's per-line markers; recorded as ``cpu_op`` but annotations, not ops. Equal to
``protocol.LINE_MARKER_PREFIX`` (the analysis imports nothing of ours; a test holds them equal)."""

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


class EventSink:
    """Normalises raw events one at a time: ``accept`` is json's ``object_hook``.

    As the hook, it sees each event dict the moment the parser has built it, keeps what the
    analysis reads (a :class:`Span` holding the name and the ``args`` dict by reference) and
    lets the dict go while it is still in cache. That is both the single pass over the events
    and most of the cost of freeing them: parsing with the hook is faster than parsing alone.
    Every dict goes through the hook, inner ones first, so ``args`` objects, device properties
    and the document itself (no ``"ph"`` key) come back unchanged.
    """

    def __init__(self) -> None:
        self.lists: list[list[Span]] = [[] for _ in range(12)]
        self.track_ids: dict[tuple[object, object], int] = {}
        self.track_kinds: list[int] = []
        self.track_keys: list[tuple[object, object]] = []
        self.track_first_args: list[Any] = []
        self.thread_names: dict[tuple[object, object], str] = {}
        self.flags = {"legacy": False, "skipped": 0}
        self.memory_raw: list[tuple[Any, Any, Any, Any]] = []
        """``[memory]`` instant events as (ts, pid, tid, args), placed in ``finish``."""
        self.memory_ready: list[MemoryEvent] | None = None
        """The same already placed, in file order (by the C scanner: ``fastload``)."""
        self.origin: list[Any] = [None]
        self.accept = self._make_accept()

    def _make_accept(self) -> Callable[[dict[str, Any]], Any]:
        """The hook, as a closure: its state lives in fast cell variables, not attributes.

        It and ``accept`` are over 60 lines on purpose: ``accept`` runs once per JSON object
        of the trace, and every helper call or attribute lookup moved out of its body is a
        measurable share of the stdlib path. ``fastload.accept_all`` mirrors it line for line."""
        appends = [lst.append for lst in self.lists]
        track_ids = self.track_ids
        track_kinds, track_keys = self.track_kinds, self.track_keys
        track_first_args = self.track_first_args
        thread_names = self.thread_names
        flags = self.flags
        memory_raw = self.memory_raw.append
        origin_box = self.origin
        kind_of = _CATEGORY_KIND.get
        ann_prefixes = ANNOTATION_PREFIXES
        marker = LINE_MARKER_PREFIX
        legacy_cats = LEGACY_CATEGORIES
        overhead_names = PROFILER_OVERHEAD_NAMES
        empty: dict[str, Any] = {}
        new = tuple.__new__  # Span(...) without the Python-level NamedTuple.__new__ frame
        op_kind = _OP
        names: dict[str, str] = {}
        same_name = names.setdefault
        # The first complete event's timestamp, subtracted from all: Kineto writes absolute
        # epoch µs (~1.7e15, where a float64 resolves only 0.25 µs) in older traces, and
        # durations of 1-2 µs kernels must survive ``end - start``. Metadata events are not
        # used: some carry ``ts: 0``.
        origin: Any = None
        # The track of the previous event: most events continue their thread's run.
        last_pid: object = None
        last_tid: object = None
        last_track = -1

        def accept(e: dict[str, Any]) -> Any:
            nonlocal origin, last_pid, last_tid, last_track
            ph = e.get("ph")
            try:
                if ph != "X":
                    if ph is None and "ph" not in e:
                        return e  # not an event: args, device properties, the document
                    if ph == "M" and e.get("name") == "thread_name":
                        a = e.get("args")
                        if isinstance(a, dict) and isinstance(a.get("name"), str):
                            thread_names[(e.get("pid"), e.get("tid"))] = a["name"]
                    elif ph == "i" and e.get("name") == "[memory]":
                        memory_raw((e.get("ts"), e.get("pid"), e.get("tid"), e.get("args")))
                    return None
                if origin is None:
                    ts = e.get("ts")
                    if ts.__class__ in (int, float) and -1e18 < ts < 1e18:
                        origin = origin_box[0] = ts
                cat = e["cat"]
                kind = kind_of(cat)
                if kind is None:
                    return None
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
                        flags["skipped"] += 1
                        return None
                if kind == op_kind:
                    if cat in legacy_cats:
                        flags["legacy"] = True
                        if name.startswith(ann_prefixes):
                            kind = _ANN
                    elif name.startswith(marker):
                        kind = _ANN  # the worker's line markers (_RecordFunctionFast: cpu_op)
                elif cat in legacy_cats:
                    flags["legacy"] = True
                if name in overhead_names:
                    kind = _OVERHEAD
                # One string object per distinct name: the parser makes a new one per event,
                # and every later name lookup would hash its copy of a 100-character kernel
                # name again instead of reusing a cached hash and an identity match.
                name = same_name(name, name)
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
                appends[kind](new(Span, (start, end, name, track, args, args.get("correlation"))))
            except (KeyError, TypeError, ValueError, AttributeError, OverflowError):
                # A missing field, a wrong type, an unhashable pid/tid or category: not an
                # event we can place; counted, never fatal.
                flags["skipped"] += 1
            return None

        return accept

    def finish(self, path: str, meta: dict[str, Any], not_events: int) -> Trace:
        """The :class:`Trace` of everything accepted; ``not_events``: entries of
        ``traceEvents`` that were not event objects at all (counted as skipped)."""
        lists = self.lists
        # Every list sorted by start: step membership becomes one slice per step, and the
        # per-thread sweeps get nearly sorted input. Kineto writes each thread in time order,
        # so this is a merge of sorted runs.
        for lst in lists:
            lst.sort(key=_START)

        tracks: list[Track] = []
        for (pid, tid), kind, args in zip(self.track_keys, self.track_kinds, self.track_first_args):
            if kind in _DEVICE_KINDS:
                device = _int_or(args.get("device"), _int_or(pid, 0))
                stream = _int_or(args.get("stream"), _int_or(tid, 0))
                tracks.append(Track(pid, tid, device, stream))
            else:
                tracks.append(Track(pid, tid, -1, -1))
        track_ids = self.track_ids
        names = {track_ids[k]: v for k, v in self.thread_names.items() if k in track_ids}

        memory = self._memory_events()
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
            legacy=bool(self.flags["legacy"]),
            skipped_events=int(self.flags["skipped"]) + not_events,
            memory=memory,
        )
        recognised = sum(len(x) for i, x in enumerate(lists) if i != _SPAN)
        if recognised == 0:
            raise TraceError(
                f"{path}: not a PyTorch profiler trace, or one that recorded nothing: none of "
                "its events has a Kineto category (cpu_op, user_annotation, kernel, "
                "cuda_runtime, …); check that the profiled code ran inside the profiler's "
                "active steps"
            )
        return trace

    def _memory_events(self) -> list[MemoryEvent]:
        """The ``[memory]`` events on the spans' clock and tracks; malformed ones are skipped."""
        if self.memory_ready is not None:
            self.memory_ready.sort(key=_START)
            return self.memory_ready
        origin = self.origin[0] or 0
        out: list[MemoryEvent] = []
        for ts, pid, tid, args in self.memory_raw:
            try:
                out.append(
                    MemoryEvent(
                        ts - origin,
                        self.track_ids.get((pid, tid), -1),
                        int(args["Bytes"]),
                        int(args.get("Addr", 0)),
                        int(args.get("Device Type", 0)),
                        int(args.get("Device Id", -1)),
                    )
                )
            except (KeyError, TypeError, ValueError, AttributeError):
                self.flags["skipped"] += 1
        out.sort(key=_START)
        return out


def normalise(path: str, meta: dict[str, Any], events: list[Any]) -> Trace:
    """Split already parsed raw events by kind into :class:`Span` lists."""
    sink = EventSink()
    accept = sink.accept
    not_events = 0
    for e in events:
        if not isinstance(e, dict) or accept(e) is not None:
            not_events += 1
    return sink.finish(path, meta, not_events)
