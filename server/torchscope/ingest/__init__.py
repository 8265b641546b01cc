"""Reading a Kineto trace into a :class:`Trace`: one public entry, :func:`load_trace`.

Imports nothing else of torchscope's, and neither torch nor pygls. Layout:

- ``kineto.py``: the Kineto event model, as data (kinds, categories, names, ``args`` keys);
- ``model.py``: what a reader produces (:class:`Trace`, :class:`Span`, …);
- ``source.py``: a trace's bytes, inflated as they are read, and every way that fails;
- ``memory.py``: will a whole-trace analysis fit in memory (asked before reading);
- ``sink.py``: where both readers put events, and the Python rule for one event;
- ``fast.py`` (C, ``_native*.c`` behind ``accel.py``) and ``reference.py`` (stdlib json):
  the two readers, held equal by tests;
- ``load.py``: :func:`load_trace`, which picks the reader, and ``--steps``.
"""

from __future__ import annotations

from .errors import TraceError
from .kineto import KINETO, LINE_MARKER_PREFIX, EventModel
from .load import load_trace
from .model import DeviceProps, MemoryEvent, Span, Trace, Track

__all__ = [
    "KINETO",
    "LINE_MARKER_PREFIX",
    "DeviceProps",
    "EventModel",
    "MemoryEvent",
    "Span",
    "Trace",
    "TraceError",
    "Track",
    "load_trace",
]
