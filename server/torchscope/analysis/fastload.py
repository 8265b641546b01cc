"""The fast path of reading a trace: the C scanner (``_native``, :func:`scan_native`) or,
where it is not built or hands a document back, msgspec's typed decode (:func:`accept_all`
over ``msgspec_types``, imported only then) reads the events straight into spans, leaving
each event's ``args`` undecoded (``_native.Args``, ``lazyjson.LazyArgs``) until a rule reads it.

It gives exactly the :class:`Trace` that :class:`~.normalise.EventSink` builds from stdlib
``json`` (the snapshot tests hold the reports byte-identical), for every document whose
fields have the types Kineto writes. Anything else (a ``ts`` that is a string, a ``pid``
that is a float, ``NaN``, a number beyond float64, invalid JSON) makes the typed decode fail
as a whole, and :func:`load_fast` returns ``None``: the caller then reads the document the
stdlib way, which skips and counts odd events and words parse errors (see ``parse.py``).
"""

from __future__ import annotations

import gc
import re
from collections.abc import Iterable, Iterator
from typing import Any, Callable, TypeVar, Union

from . import accel
from .lazyjson import LazyArgs, decode_errors, decode_json, msgspec_decode, typed
from .model import MemoryEvent, Span, Trace
from .normalise import (
    _ANN,
    _CATEGORY_KIND,
    _DEVICE_KINDS,
    _OP,
    _OVERHEAD,
    ANNOTATION_PREFIXES,
    LEGACY_CATEGORIES,
    LINE_MARKER_PREFIX,
    PROFILER_OVERHEAD_NAMES,
    EventSink,
)

_EMPTY: dict[str, Any] = {}
_T = TypeVar("_T")


CHUNK_BYTES = 8 << 20
"""Bytes of the event array decoded at a time: one chunk's structs are normalised while
they are still in cache, and the whole event list never exists at once."""


_KEY = re.compile(rb'"traceEvents"\s*:\s*\[')
_BLANK = re.compile(rb"\s*")
_Buf = Union[bytes, bytearray]


def array_span(data: _Buf) -> tuple[dict[str, Any], int, int] | None:
    """The metadata and ``[lo, hi)`` of the event array's bytes in a trace document
    (``data[lo:lo+1] == b"["``), or ``None`` when there is no event list.

    Raises ``msgspec.DecodeError`` for invalid JSON (the whole document is validated)."""
    t = typed()
    top = t.TOP.decode(data)
    if isinstance(top, list):  # the Chrome "JSON Array Format": only events
        lo = data.index(b"[")
        return {}, lo, data.rindex(b"]") + 1
    raw = top.pop("traceEvents", None)
    if raw is None:
        return None
    meta = {k: t.ANY.decode(v) for k, v in top.items()}
    view, size = memoryview(raw), len(raw)
    at = data.find(b'"traceEvents"')
    while at >= 0:  # the key, not a string that merely holds it: the bytes must match
        lo = data.find(b"[", at)
        if lo >= 0 and memoryview(data)[lo : lo + size] == view:
            return meta, lo, lo + size
        at = data.find(b'"traceEvents"', at + 1)
    return None  # not a list


def quick_span(data: _Buf) -> tuple[dict[str, Any], int, int] | None:
    """:func:`array_span` without reading the whole document first: the array starts at the
    first ``"traceEvents": [`` and ends at the last ``]``, which is right for every trace
    Kineto writes (nothing after the events holds a list). The rest of the document, with
    ``null`` for the events, must decode to an object whose ``traceEvents`` is that
    ``null``; a wrong end leaves the last chunk of the array invalid, so the decode fails
    and :func:`load_fast` falls back to :func:`array_span`. ``None``: no quick answer."""
    at = _BLANK.match(data).end()  # type: ignore[union-attr]
    try:
        hi = data.rindex(b"]") + 1
    except ValueError:
        return None
    if data[at : at + 1] == b"[":
        if _BLANK.match(data, hi).end() != len(data):  # type: ignore[union-attr]
            return None
        return {}, at, hi
    found = _KEY.search(data)
    if found is None:
        return None
    lo = found.end() - 1
    meta = meta_around(data, lo, hi)
    return None if meta is None else (meta, lo, hi)


def meta_around(data: _Buf, lo: int, hi: int) -> dict[str, Any] | None:
    """The document's keys other than ``traceEvents``, when its events are ``data[lo:hi]``
    of an object (``None`` when, with ``null`` for them, it is not one whose
    ``traceEvents`` is that ``null``)."""
    return meta_of(bytes(data[:lo]), bytes(data[hi:])) if lo < hi else None


def meta_of(head: bytes, tail: bytes) -> dict[str, Any] | None:
    """:func:`meta_around` of a document that is ``head``, the event array, then ``tail``."""
    try:
        meta = decode_json(head + b"null" + tail)
    except decode_errors():
        return None
    if not isinstance(meta, dict) or meta.get("traceEvents", 0) is not None:
        return None
    del meta["traceEvents"]
    return meta


def chunks(data: _Buf, lo: int, hi: int, decode: Callable[[Any], list[_T]]) -> Iterator[_T]:
    """The elements of the JSON array ``data[lo:hi]``, decoded a chunk at a time.

    A chunk ends at a ``},`` at least :data:`CHUNK_BYTES` in. One inside a string or a
    nested object leaves the chunk unbalanced, so it fails to decode and the cut moves on
    to the next ``},``: a chunk that decodes is always a run of whole elements.

    A ``bytearray`` is decoded in place: the ``,`` on each side of the chunk is overwritten
    with ``[``/``]`` for the decode and put back after, so the ``Raw`` args of the decoded
    events point into ``data`` itself (no copy of the chunk, which they would pin)."""
    a = lo + 1
    end = hi - 1  # the closing bracket
    buf = data if isinstance(data, bytearray) else None
    view = memoryview(data)
    while a < end:
        b = data.find(b"},", min(a + CHUNK_BYTES, end), end)
        while True:
            stop = end if b < 0 else b + 1
            try:
                if buf is not None:
                    left, right = buf[a - 1], buf[stop]
                    buf[a - 1], buf[stop] = 0x5B, 0x5D  # "[", "]"
                    try:
                        items = decode(view[a - 1 : stop + 1])
                    finally:
                        buf[a - 1], buf[stop] = left, right
                else:
                    items = decode(b"[" + data[a:stop] + b"]")
                break
            except decode_errors()[0]:
                if b < 0:
                    raise
                b = data.find(b"},", b + 2, end)
        yield from items
        del items
        a = end if b < 0 else b + 2


def load_fast(name: str, data: _Buf) -> Trace | None:
    """The :class:`Trace` of decompressed trace bytes, or ``None`` when the document is not
    one the typed decode takes (then the stdlib path reads it and words any error).

    The collector is paused meanwhile: the spans built here cannot be garbage yet, and its
    passes over them would add half again to the normalising loop."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        quick = quick_span(data)
        if quick is not None:
            try:
                return _load(name, data, quick)
            except decode_errors():
                pass  # a wrong guess at the end, or a bad document: read it fully first
        return _load(name, data, array_span(data))
    except decode_errors():
        return None
    finally:
        if enabled:
            gc.enable()


def _load(name: str, data: _Buf, found: tuple[dict[str, Any], int, int] | None) -> Trace | None:
    if found is None or found[2] - found[1] < 3:
        return None  # the stdlib path words the missing or empty event list
    meta, lo, hi = found
    sink = EventSink()
    native = scan_native(sink, data, lo, hi)
    not_events: int | None = None
    if native is not None:
        not_events, end = native
        if end != hi:  # the array ends before quick_span's guess: a list follows it
            whole = _BLANK.match(data).end() == lo  # type: ignore[union-attr]
            around = None if whole else meta_around(data, lo, end)
            if around is None:
                not_events = None
            else:
                meta = around
    if not_events is None:
        sink = EventSink()
        not_events = accept_all(sink, chunks(data, lo, hi, typed().EVENTS.decode))
    return finish_sink(name, sink, meta, not_events)


def finish_sink(name: str, sink: EventSink, meta: dict[str, Any], not_events: int) -> Trace | None:
    """The :class:`Trace` of a filled sink; ``None`` when it holds nothing at all."""
    if not_events == 0 and sum(map(len, sink.lists)) == 0 and not sink.flags["skipped"]:
        return None  # possibly an empty list with whitespace: let the stdlib path judge
    return sink.finish(name, meta, not_events)


_SCAN_CONSTANTS = (
    _CATEGORY_KIND,
    LEGACY_CATEGORIES,
    ANNOTATION_PREFIXES,
    LINE_MARKER_PREFIX,
    PROFILER_OVERHEAD_NAMES,
    Span,
    _EMPTY,
    None,  # a [memory] event's missing ts, as the Python loop reads it (then skips it)
    MemoryEvent,
    _OP,
    _ANN,
    _OVERHEAD,
)


def scan_native(sink: EventSink, data: _Buf, lo: int, hi: int) -> tuple[int, int] | None:
    """:func:`accept_all` over the event array at ``data[lo]`` in C (``_native_scan.c``), reading
    the bytes straight into spans: the non-event count and where the array ends (``hi``,
    or earlier when a guessed end was wrong). ``None`` when the C scanner is not built or
    does not take this document (odd types, escapes it leaves to msgspec, invalid JSON):
    ``sink`` is then partly filled, and the caller starts again with a new one."""
    native = accel.native
    if native is None:
        return None
    done = native.scan(data, lo, hi, sink, _SCAN_CONSTANTS, msgspec_decode)
    if done is None:
        return None
    return take_scan(sink, done), int(done[4])


def take_scan(sink: EventSink, done: tuple[Any, int, int, bool, Any, Any]) -> int:
    """Put what a C scan (``scan`` or ``scan_stream``) found besides the spans into ``sink``;
    the non-event count."""
    origin, skipped, not_events, legacy, _, memory = done
    sink.memory_ready = memory
    if sink.origin[0] is None:
        sink.origin[0] = origin
    sink.flags["skipped"] += skipped
    sink.flags["legacy"] = sink.flags["legacy"] or legacy
    return int(not_events)


def accept_all(
    sink: EventSink, events: Iterable[Any], window: tuple[float, float, float, Any] | None = None
) -> int:
    """:meth:`EventSink.accept`'s logic over decoded structs (kept in step with it, line for
    line; ``test_analysis_fastload`` holds the two equal); returns the non-event count.

    One long loop on purpose: it runs once per event, and every call or attribute lookup
    hoisted out of it is a measurable share of the whole analysis."""
    appends = [lst.append for lst in sink.lists]
    track_ids, track_kinds, track_keys = sink.track_ids, sink.track_kinds, sink.track_keys
    track_first_args = sink.track_first_args
    thread_names = sink.thread_names
    memory_raw = sink.memory_raw.append
    kind_of = _CATEGORY_KIND.get
    t = typed()
    head, decode, unset, invalid = t.HEAD.decode, t.ANY.decode, t.UNSET, t.ValidationError
    ann_prefixes, marker = ANNOTATION_PREFIXES, LINE_MARKER_PREFIX
    legacy_cats, overhead_names = LEGACY_CATEGORIES, PROFILER_OVERHEAD_NAMES
    new = tuple.__new__
    names: dict[str, str] = {}
    same_name = names.setdefault
    # ``--steps``: keep CPU events starting in [lo, hi) and device events in [lo, hi_dev)
    # (absolute trace µs), with the origin the whole trace would have.
    windowed = window is not None
    lo, hi, hi_dev, origin = window if window is not None else (0.0, 0.0, 0.0, None)
    last_pid: object = None
    last_tid: object = None
    last_track = -1
    skipped = not_events = 0
    legacy = False
    for e in events:
        ph = e.ph
        if ph != "X":
            if ph is unset:
                not_events += 1
            elif ph == "M" and e.name == "thread_name" and e.args:
                a = decode(e.args)
                if isinstance(a, dict) and isinstance(a.get("name"), str):
                    thread_names[(e.pid, e.tid)] = a["name"]
            elif (
                ph == "i"
                and e.name == "[memory]"
                and e.args
                and (not windowed or (e.ts is not unset and lo <= e.ts < hi))  # type: ignore[operator]
            ):
                memory_raw((e.ts, e.pid, e.tid, decode(e.args)))
            continue
        ts = e.ts
        if origin is None and ts is not unset and -1e18 < ts < 1e18:  # type: ignore[operator]
            origin = ts
        cat = e.cat
        if cat is unset:
            skipped += 1
            continue
        kind = kind_of(cat)  # type: ignore[arg-type]
        if kind is None:
            continue
        name = e.name
        if name is unset or ts is unset or origin is None:
            skipped += 1
            continue
        if windowed and not lo <= ts < (hi_dev if kind in _DEVICE_KINDS else hi):  # type: ignore[operator]
            continue  # outside the chosen steps
        start = ts - origin  # type: ignore[operator]
        dur = e.dur
        end = start + (0.0 if dur is unset else dur)  # type: ignore[operator]
        raw = e.args
        if raw:
            try:
                h = head(raw)
            except invalid:  # args is not an object: not placeable
                skipped += 1
                continue
            if h is None:
                args: Any = _EMPTY
                corr = None
            else:
                # Windowed, each kept event copies its args out of the chunk, which is freed.
                args = new(LazyArgs, (raw.copy() if windowed else raw,))
                corr = h.correlation
        else:
            args, corr = _EMPTY, None
        if not -1e18 < start <= end < 1e18:
            skipped += 1
            continue
        if kind == _OP:
            if cat in legacy_cats:
                legacy = True
                if name.startswith(ann_prefixes):  # type: ignore[union-attr]
                    kind = _ANN
            elif name.startswith(marker):  # type: ignore[union-attr]
                kind = _ANN
        elif cat in legacy_cats:
            legacy = True
        if name in overhead_names:
            kind = _OVERHEAD
        name = same_name(name, name)  # type: ignore[arg-type]
        pid = e.pid
        tid = e.tid
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
        appends[kind](new(Span, (start, end, name, track, args, corr)))
    if sink.origin[0] is None:
        sink.origin[0] = origin  # the clock ``[memory]`` events are placed on (``finish``)
    sink.flags["skipped"] += skipped
    sink.flags["legacy"] = sink.flags["legacy"] or legacy
    return not_events
