"""Where both readers put what they read: an :class:`EventSink` per trace, and its rule for
one event in Python (:meth:`EventSink.accept`, the reference reader's; the fast reader's C
scanner fills the same sink by the same rule, and tests hold the two equal).

``ts`` is always microseconds in Kineto output, also under ``displayTimeUnit: ns`` (that key
only changes how viewers *display* time) and also when ``ts`` is relative to
``baseTimeNanoseconds``: analysis only uses differences, so both are taken as they are.
String tids (``"24572"``, ``"stream 7"``), string or missing device/stream ids,
``deviceProperties`` and the older ``computeProperties`` are all read.

Events with missing or ill-typed fields are skipped and counted, never fatal: a trace that
parses as JSON is always analysed as far as its contents allow.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from operator import itemgetter
from typing import Any

from .errors import TraceError
from .kineto import KINETO, EventModel
from .model import DeviceProps, MemoryEvent, Span, Trace, Track

_START = itemgetter(0)

Window = tuple[Any, tuple[tuple[float, float], ...], tuple[float, float]]
"""``--steps``: (the whole trace's origin, ``(lo, hi)`` per kind, ``(lo, hi)`` of
``[memory]`` events), absolute trace µs: a span of kind k is kept when ``lo <= ts < hi``."""


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
    """The spans, tracks, thread names and ``[memory]`` events of one trace, as read.

    ``accept`` is the reference reader's rule for one event: stdlib json's ``object_hook``,
    so it sees each event dict the moment the parser has built it. Every dict goes through
    the hook, inner ones first, so ``args`` objects, device properties and the document
    itself (no ``"ph"`` key) come back unchanged.
    """

    def __init__(self, model: EventModel = KINETO, window: Window | None = None) -> None:
        self.model = model
        self.window = window
        self.lists: list[list[Span]] = [[] for _ in model.kinds]
        self.track_ids: dict[tuple[object, object], int] = {}
        self.track_kinds: list[int] = []
        self.track_keys: list[tuple[object, object]] = []
        self.track_first_args: list[Any] = []
        self.thread_names: dict[tuple[object, object], str] = {}
        self.flags = {"legacy": False, "skipped": 0}
        self.memory_raw: list[tuple[Any, Any, Any, Any]] = []
        """``[memory]`` instant events as (ts, pid, tid, args), placed in ``finish``."""
        self.memory_ready: list[MemoryEvent] | None = None
        """The same already placed, in file order (by the C scanner)."""
        self.origin: list[Any] = [None if window is None else window[0]]
        self.non_finite: tuple[dict[str, Any], str, float] | None = None
        """The first complete event skipped for a non-finite ``ts`` or ``dur`` (NaN,
        ±Infinity: stdlib json reads them), that key and its value: what a trace of nothing
        else is told (``finish``)."""
        self.non_finite_at: int | None = None
        """Its index in ``traceEvents``, where the reader found it (``reference.scan``)."""
        self.accept = self._make_accept()

    def _make_accept(self) -> Callable[[dict[str, Any]], Any]:
        """The hook, as a closure: its state lives in fast cell variables, not attributes.

        Over 60 lines on purpose: it runs once per JSON object of the trace, and every helper
        call or attribute lookup moved out of its body is a measurable share of the read."""
        m = self.model
        appends = [lst.append for lst in self.lists]
        track_ids = self.track_ids
        track_kinds, track_keys = self.track_kinds, self.track_keys
        track_first_args = self.track_first_args
        thread_names = self.thread_names
        flags = self.flags
        skip = self._skip
        memory_raw = self.memory_raw.append
        origin_box = self.origin
        kind_of = m.category_kinds().get
        op_kind, ann_kind, overhead_kind = m.kind("ops"), m.kind("annotations"), m.kind("overhead")
        ann_prefixes, marker = m.annotation_prefixes, m.line_marker_prefix
        legacy_cats, overhead_names = m.legacy_categories, m.overhead_names
        span_keys, span_type = m.span_keys, m.span_type
        window = self.window
        ranges, (mem_lo, mem_hi) = (window[1], window[2]) if window else ((), (0.0, 0.0))
        empty: dict[str, Any] = {}
        new = tuple.__new__  # Span(...) without the Python-level NamedTuple.__new__ frame
        names: dict[str, str] = {}
        same_name = names.setdefault
        # The first complete event's timestamp, subtracted from all: Kineto writes absolute
        # epoch µs (~1.7e15, where a float64 resolves only 0.25 µs) in older traces, and
        # durations of 1-2 µs kernels must survive ``end - start``. Metadata events are not
        # used: some carry ``ts: 0``. With a window, the whole trace's, given.
        origin: Any = origin_box[0]
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
                        ts = e.get("ts")
                        if not window or (ts.__class__ in (int, float) and mem_lo <= ts < mem_hi):
                            memory_raw((ts, e.get("pid"), e.get("tid"), e.get("args")))
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
                if name.__class__ is not str:
                    raise TypeError
                legacy = cat in legacy_cats
                if kind == op_kind and (
                    name.startswith(ann_prefixes) if legacy else name.startswith(marker)
                ):
                    kind = ann_kind  # legacy annotations; the worker's line markers
                if name in overhead_names:
                    kind = overhead_kind
                if window and not ranges[kind][0] <= e["ts"] < ranges[kind][1]:
                    return None  # outside the chosen steps
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
                if not -1e18 < start <= end < 1e18 or args.__class__ is not dict:
                    if args is None and -1e18 < start <= end < 1e18:
                        args = empty
                    else:
                        return skip(e)
                if legacy:
                    flags["legacy"] = True
                # One string object per distinct name: the parser makes a new one per event,
                # and every later name lookup would hash its copy again.
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
                keys = [args.get(k) for k in span_keys]
                appends[kind](new(span_type, (start, end, name, track, args, *keys)))
            except (KeyError, TypeError, ValueError, AttributeError, OverflowError):
                # A missing field, a wrong type, an unhashable pid/tid or category: not an
                # event we can place; counted, never fatal.
                return skip(e)
            return None

        return accept

    def _skip(self, e: dict[str, Any]) -> Any:
        """Count a complete event that cannot be placed. The first with a non-finite ``ts``
        or ``dur`` is noted, and returned: the parser keeps it in the event list, where its
        position is its index."""
        self.flags["skipped"] += 1
        if self.non_finite is None:
            for key in ("ts", "dur"):
                value = e.get(key)
                if value.__class__ is float and not math.isfinite(value):
                    self.non_finite = (e, key, value)
                    return e
        return None

    def take_scan(self, done: tuple[Any, int, int, bool, Any, Any]) -> int:
        """Put what a C scan found besides the spans into the sink; the non-event count."""
        origin, skipped, not_events, legacy, _, memory = done
        self.memory_ready = memory
        if self.origin[0] is None:
            self.origin[0] = origin
        self.flags["skipped"] += skipped
        self.flags["legacy"] = self.flags["legacy"] or legacy
        return int(not_events)

    def empty(self) -> bool:
        """Nothing was read at all (no span, no skipped event)."""
        return sum(map(len, self.lists)) == 0 and not self.flags["skipped"]

    def finish(self, path: str, meta: dict[str, Any], not_events: int) -> Trace:
        """The :class:`Trace` of everything accepted; ``not_events``: entries of
        ``traceEvents`` that were not event objects at all (counted as skipped)."""
        m = self.model
        lists = self.lists
        # Every list sorted by start: step membership becomes one slice per step, and the
        # per-thread sweeps get nearly sorted input. Kineto writes each thread in time order,
        # so this is a merge of sorted runs.
        for lst in lists:
            lst.sort(key=_START)
        track_ids = self.track_ids
        names = {track_ids[k]: v for k, v in self.thread_names.items() if k in track_ids}
        trace = m.trace_type(
            path=path,
            meta=meta,
            **dict(zip(m.kinds, lists)),
            tracks=self._tracks(),
            devices=_devices(meta),
            thread_names=names,
            legacy=bool(self.flags["legacy"]),
            memory=self._memory_events(),
            skipped_events=int(self.flags["skipped"]) + not_events,
        )
        spans = m.kind("trace_spans")
        if not any(len(x) for i, x in enumerate(lists) if i != spans):
            if self.non_finite is not None:
                raise TraceError(f"{path}: nothing to analyse: {self._non_finite_text()}")
            raise TraceError(
                f"{path}: not a PyTorch profiler trace, or one that recorded nothing: none of "
                "its events has a Kineto category (cpu_op, user_annotation, kernel, "
                "cuda_runtime, …); check that the profiled code ran inside the profiler's "
                "active steps"
            )
        return trace

    def _non_finite_text(self) -> str:
        """``event 0 has a non-finite timestamp (ts: Infinity)``, JSON's spelling."""
        assert self.non_finite is not None
        _, key, value = self.non_finite
        spelt = "NaN" if math.isnan(value) else ("-Infinity" if value < 0 else "Infinity")
        what = "timestamp" if key == "ts" else "duration"
        at = "an event" if self.non_finite_at is None else f"event {self.non_finite_at}"
        return f"{at} has a non-finite {what} ({key}: {spelt})"

    def _tracks(self) -> list[Track]:
        device_kinds = self.model.device_kind_indices()
        dev_key, stream_key = self.model.track_keys
        tracks: list[Track] = []
        for (pid, tid), kind, args in zip(self.track_keys, self.track_kinds, self.track_first_args):
            if kind in device_kinds:
                device = _int_or(args.get(dev_key), _int_or(pid, 0))
                stream = _int_or(args.get(stream_key), _int_or(tid, 0))
                tracks.append(Track(pid, tid, device, stream))
            else:
                tracks.append(Track(pid, tid, -1, -1))
        return tracks

    def _memory_events(self) -> list[MemoryEvent]:
        """The ``[memory]`` events on the spans' clock and tracks; malformed ones are skipped."""
        if self.memory_ready is not None:
            self.memory_ready.sort(key=_START)
            return self.memory_ready
        origin = self.origin[0] or 0
        new = self.model.memory_type
        out: list[MemoryEvent] = []
        for ts, pid, tid, args in self.memory_raw:
            try:
                out.append(
                    new(
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
