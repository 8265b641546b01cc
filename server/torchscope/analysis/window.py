"""``--steps FIRST-LAST``: analyse a few steps of a trace too large to analyse whole.

Two passes over the event array, each decoding it a chunk (a few MB) at a time, so memory
holds the trace's bytes, one chunk's structs and the chosen steps' events, never every
event at once:

1. find the ``ProfilerStep#N`` annotations and the trace's time origin;
2. keep CPU events that start within the chosen steps, and device events that start
   between the first chosen step's start and the end of the step after the last chosen one
   (kernels run behind the CPU, so the last step's work reaches into the next step).

The report then covers exactly the chosen steps, with timestamps on the whole trace's clock.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any, Callable, TypeVar, Union

import msgspec
from msgspec import UNSET, Raw, UnsetType

from .errors import TraceError
from .fastload import _ANY, _EVENTS, accept_all
from .model import Trace
from .normalise import EventSink

CHUNK_BYTES = 8 << 20
"""Bytes of the event array decoded at a time."""

_STEP = re.compile(r"ProfilerStep#(\d+)$")
_T = TypeVar("_T")


class _Mark(msgspec.Struct, gc=False):
    ph: Union[str, UnsetType] = UNSET
    name: Union[str, UnsetType] = UNSET
    ts: Union[int, float, UnsetType] = UNSET
    dur: Union[int, float, UnsetType] = UNSET


_MARKS = msgspec.json.Decoder(list[_Mark])
_TOP = msgspec.json.Decoder(Union[dict[str, Raw], list[Raw]])


def parse_steps(text: str) -> tuple[int, int]:
    """``"10-20"`` → ``(10, 20)``; ``"7"`` → ``(7, 7)``."""
    m = re.fullmatch(r"\s*(\d+)\s*(?:-\s*(\d+)\s*)?", text)
    if m is None:
        raise ValueError(f"{text!r} is not a step range; write FIRST-LAST, e.g. 10-20")
    first, last = int(m.group(1)), int(m.group(2) or m.group(1))
    if last < first:
        raise ValueError(f"{text!r}: the last step comes before the first; write e.g. 10-20")
    return first, last


def _array_span(name: str, data: bytes) -> tuple[dict[str, Any], int, int]:
    """The metadata and ``[lo, hi)`` of the event array's bytes (``data[lo] == b"["``)."""
    try:
        top = _TOP.decode(data)
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise TraceError(f"{name}: not a Kineto trace ({exc}); --steps reads only valid "
                         "JSON traces; run analyze without --steps for details") from None
    if isinstance(top, list):
        lo = data.index(b"[")
        return {}, lo, data.rindex(b"]") + 1
    raw = top.pop("traceEvents", None)
    if raw is None:
        raise TraceError(f"{name}: not a Kineto trace: no 'traceEvents' list")
    meta = {k: _ANY.decode(v) for k, v in top.items()}
    view, size = memoryview(raw), len(raw)
    at = data.find(b'"traceEvents"')
    while at >= 0:  # the key, not a string that merely holds it: the bytes must match
        lo = data.find(b"[", at)
        if lo >= 0 and memoryview(data)[lo : lo + size] == view:
            return meta, lo, lo + size
        at = data.find(b'"traceEvents"', at + 1)
    raise TraceError(f"{name}: 'traceEvents' is not a list; expected a Kineto trace")


def _chunks(
    data: bytes, lo: int, hi: int, decode: Callable[[bytes], list[_T]]
) -> Iterator[list[_T]]:
    """Decode the JSON array ``data[lo:hi]`` a chunk of whole elements at a time.

    A chunk ends at a ``},`` at least :data:`CHUNK_BYTES` in. One inside a string or a
    nested object leaves the chunk unbalanced, so it fails to decode and the cut moves on
    to the next ``},``: a chunk that decodes is always a run of whole elements."""
    a = lo + 1
    end = hi - 1  # the closing bracket
    while a < end:
        b = data.find(b"},", min(a + CHUNK_BYTES, end), end)
        while True:
            stop = end if b < 0 else b + 1
            try:
                items = decode(b"[" + data[a:stop] + b"]")
                break
            except msgspec.DecodeError:
                if b < 0:
                    raise
                b = data.find(b"},", b + 2, end)
        yield items
        a = end if b < 0 else b + 2


def _find_window(
    name: str, data: bytes, lo: int, hi: int, first: int, last: int
) -> tuple[float, float, float, Any]:
    steps: dict[int, tuple[float, float]] = {}
    origin: Any = None
    for marks in _chunks(data, lo, hi, _MARKS.decode):
        for m in marks:
            if m.ph != "X" or m.ts is UNSET:
                continue
            if origin is None and -1e18 < m.ts < 1e18:
                origin = m.ts
            if m.name is not UNSET and (hit := _STEP.match(m.name)):
                end = m.ts + (0 if m.dur is UNSET else m.dur)
                steps.setdefault(int(hit.group(1)), (m.ts, end))
    if not steps:
        raise TraceError(
            f"{name}: --steps needs ProfilerStep#N annotations (written by prof.step()), and "
            "this trace has none; analyse it without --steps"
        )
    chosen = [steps[n] for n in range(first, last + 1) if n in steps]
    if not chosen:
        raise TraceError(
            f"{name}: no ProfilerStep#{first}..#{last} in this trace; it holds steps "
            f"{min(steps)}..{max(steps)}"
        )
    start = min(s for s, _ in chosen)
    stop = max(e for _, e in chosen)
    later = sorted(e for n, (_, e) in steps.items() if n > last)
    return start, stop, (later[0] if later else float("inf")), origin


def load_steps(name: str, data: bytes, steps: tuple[int, int]) -> Trace:
    """The :class:`Trace` of only ``ProfilerStep#first..#last`` of decompressed trace bytes."""
    meta, lo, hi = _array_span(name, data)
    sink = EventSink()
    not_events = 0
    try:
        window = _find_window(name, data, lo, hi, *steps)
        for events in _chunks(data, lo, hi, _EVENTS.decode):
            not_events += accept_all(sink, events, window)
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise TraceError(
            f"{name}: an event has a field of an unexpected type ({exc}); --steps reads only "
            "traces as Kineto writes them; analyse it without --steps"
        ) from None
    return sink.finish(name, meta, not_events)

