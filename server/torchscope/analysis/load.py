"""Reading a trace file: which reader fills the :class:`~.normalise.EventSink`.

A gzipped trace is scanned as it inflates (``stream``, the C scanner); what that does not
take is inflated whole and read by the C scanner or msgspec's typed decode (``fastload``);
a document neither takes (odd field types, invalid JSON), or an install with neither, is
read by stdlib ``json`` with the events normalised while they are parsed. ``--steps`` reads
the chosen steps only (``window``). Every way it can fail is a :class:`TraceError`.
"""

from __future__ import annotations

import contextlib
import os

from . import accel, fastload
from .errors import TraceError
from .model import Trace
from .normalise import EventSink
from .parse import _GZIP_MAGIC, check_memory, decompress, events_of, parse_json, read_bytes
from .stream import load_streaming


def load_trace(path: str | os.PathLike[str], steps: tuple[int, int] | None = None) -> Trace:
    """Read and normalise one trace file (``.json`` or ``.json.gz``); with ``steps``
    (first, last ``ProfilerStep`` number), only the events of those steps."""
    name = os.fspath(path)
    if steps is None:  # a plain JSON file too large is refused before it is read
        with contextlib.suppress(OSError), open(name, "rb") as fh:
            if fh.read(2) != _GZIP_MAGIC:
                check_memory(name, os.fstat(fh.fileno()).st_size)
    return load_trace_bytes(name, read_bytes(name), steps)


def load_trace_bytes(
    name: str, data: bytes | bytearray, steps: tuple[int, int] | None = None
) -> Trace:
    """Read and normalise a trace held in memory (``name`` is used in messages only).

    The C scanner or msgspec's typed decode reads every trace Kineto writes (``fastload``);
    a document neither takes (odd field types, invalid JSON), or an install with neither, is
    read by stdlib ``json`` with the events normalised while they are parsed
    (:class:`EventSink`), which skips what it cannot place and words every parse error."""
    if steps is None:
        streamed = load_streaming(name, data)  # None: not gzip, or read it whole, as below
        if streamed is not None:
            return streamed
    # Only the C scanner reads without writing; --steps and msgspec decode in place.
    text = decompress(name, data, writable=steps is not None or accel.native is None)
    del data
    if steps is not None:
        try:
            from . import window
        except ImportError:  # msgspec missing (a bundle built for another Python)
            raise TraceError(
                f"{name}: --steps needs the msgspec package; pip install msgspec"
            ) from None
        return window.load_steps(name, text, steps)
    check_memory(name, len(text))
    try:
        trace = fastload.load_fast(name, text)
    except ImportError:  # no msgspec, and a document the C scanner left to it: stdlib path
        trace = None
    if trace is not None:
        return trace
    sink = EventSink()
    meta, events = events_of(name, parse_json(name, text, sink.accept))
    return sink.finish(name, meta, len(events) - events.count(None))
