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
from typing import Any, Union

import msgspec
from msgspec import UNSET, UnsetType

from .errors import TraceError
from .fastload import accept_all, array_span, chunks, quick_span
from .model import Trace
from .msgspec_types import EVENTS
from .normalise import EventSink

_STEP = re.compile(r"ProfilerStep#(\d+)$")


class _Mark(msgspec.Struct, gc=False):
    ph: Union[str, UnsetType] = UNSET
    name: Union[str, UnsetType] = UNSET
    ts: Union[int, float, UnsetType] = UNSET
    dur: Union[int, float, UnsetType] = UNSET


_MARKS = msgspec.json.Decoder(list[_Mark])


def _find_window(
    name: str, data: bytes | bytearray, lo: int, hi: int, first: int, last: int
) -> tuple[float, float, float, Any]:
    steps: dict[int, tuple[float, float]] = {}
    origin: Any = None
    for m in chunks(data, lo, hi, _MARKS.decode):
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


def load_steps(name: str, data: bytes | bytearray, steps: tuple[int, int]) -> Trace:
    """The :class:`Trace` of only ``ProfilerStep#first..#last`` of decompressed trace bytes.

    The event array is found without a pass over the whole document first (``quick_span``);
    when that guess does not decode, the document is read fully to find it."""
    quick = quick_span(data)
    if quick is not None:
        try:
            return _load_steps(name, data, quick, steps)
        except (msgspec.DecodeError, msgspec.ValidationError):
            pass
    try:
        found = array_span(data)
        if found is None:
            raise TraceError(f"{name}: not a Kineto trace: no 'traceEvents' list")
        return _load_steps(name, data, found, steps)
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise TraceError(
            f"{name}: an event has a field of an unexpected type ({exc}); --steps reads only "
            "traces as Kineto writes them; analyse it without --steps"
        ) from None


def _load_steps(
    name: str,
    data: bytes | bytearray,
    found: tuple[dict[str, Any], int, int],
    steps: tuple[int, int],
) -> Trace:
    meta, lo, hi = found
    sink = EventSink()
    window = _find_window(name, data, lo, hi, *steps)
    not_events = accept_all(sink, chunks(data, lo, hi, EVENTS.decode), window)
    return sink.finish(name, meta, not_events)
