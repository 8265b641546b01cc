"""``load_trace``: the one way into a trace. The fast reader (``fast.py``, C) reads it as it
streams; what that hands back, or every trace where the C part is not built, the reference
reader (``reference.py``) reads. ``--steps`` is a window over the same readers: a first pass
finds the ``ProfilerStep#N`` annotations, a second keeps the chosen steps' events."""

from __future__ import annotations

import os
import re
from typing import Any

from . import fast, reference
from .errors import TraceError
from .kineto import KINETO, EventModel
from .model import Span, Trace
from .sink import EventSink, Window
from .source import Source, open_document, open_file

_STEP = re.compile(r"ProfilerStep#(\d+)$")
_NOWHERE = (float("inf"), float("-inf"))
_EVERYWHERE = (float("-inf"), float("inf"))


def load_trace(
    source: Source,
    *,
    steps: tuple[int, int] | None = None,
    model: EventModel = KINETO,
    name: str | None = None,
) -> Trace:
    """Read one trace (a ``.json`` or ``.json.gz`` file's path, or its bytes); with ``steps``
    (first, last ``ProfilerStep`` number), only the events of those steps. ``name`` is used
    in messages (default: the path). Every way it can fail is a :class:`TraceError`."""
    if name is None:
        name = "<trace bytes>" if isinstance(source, (bytes, bytearray)) else os.fspath(source)
    if steps is None:
        sink, meta, not_events = _fill(name, source, EventSink(model), bounded=True)
    else:
        first = _fill(name, source, EventSink(model, _first_pass(model)), bounded=False)[0]
        window = _step_window(name, first, model, *steps)
        sink, meta, not_events = _fill(name, source, EventSink(model, window), bounded=False)
    return sink.finish(name, meta, not_events)


def _fill(
    name: str, source: Source, sink: EventSink, bounded: bool
) -> tuple[EventSink, dict[str, Any], int]:
    """A sink filled by the fast reader where it takes the document, else by the reference
    reader (in a new sink), with the document's metadata and its count of non-events."""
    with open_file(source, name) as fh:
        got = fast.scan(open_document(fh, name, bounded), sink)
    if got is None:
        sink = EventSink(sink.model, sink.window)
        with open_file(source, name) as fh:
            got = reference.scan(name, open_document(fh, name, bounded), sink)
    return sink, *got


def _first_pass(model: EventModel) -> Window:
    """Keep only the annotations (``ProfilerStep#N`` among them), on the trace's own clock."""
    ann = model.kind("annotations")
    ranges = tuple(_EVERYWHERE if k == ann else _NOWHERE for k in range(len(model.kinds)))
    return (None, ranges, _NOWHERE)


def _step_window(name: str, sink: EventSink, model: EventModel, first: int, last: int) -> Window:
    """Keep CPU events that start within the chosen steps, and device events that start
    between the first chosen step's start and the end of the step after the last chosen
    one (kernels run behind the CPU, so the last step's work reaches into the next step)."""
    origin = sink.origin[0]
    steps: dict[int, tuple[float, float]] = {}
    ann: list[Span] = sink.lists[model.kind("annotations")]
    for span in ann:
        hit = _STEP.match(span.name)
        if hit is not None and origin is not None:
            steps.setdefault(int(hit.group(1)), (span.start + origin, span.end + origin))
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
    device_end = later[0] if later else float("inf")
    device = model.device_kind_indices()
    ranges = tuple((start, device_end if k in device else stop) for k in range(len(model.kinds)))
    return (origin, ranges, (start, stop))
