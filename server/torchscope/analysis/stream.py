"""Reading a gzipped trace as it inflates: the C scanner's streaming mode.

Inflating a 54 MB trace whole and then scanning it faults in 54 MB (13k pages, about a
tenth of the analysis on these machines), holds it to the end (the spans' ``Args`` point
into it) and scans bytes that left the cache while the rest inflated. :func:`load_streaming`
instead feeds ``_native.scan_stream`` a megabyte at a time through a reused window; each
span's args (a quarter of the bytes) are copied into blocks that its ``Args`` pins.

The document is what the whole read would parse: the bytes before the first
``"traceEvents": [`` and after the array's closing bracket must make, with ``null`` for
the events, an object (``fastload.meta_of``). Anything else (no C scanner, a plain JSON
file, a trace over 4 GiB whose size the gzip trailer cannot give, a multi-member or
corrupt gzip file, a document the scanner hands back) returns ``None``, and the caller
reads the trace whole as before, with its errors and fallbacks.
"""

from __future__ import annotations

import gc

from . import accel
from .fastload import _KEY, _SCAN_CONSTANTS, finish_sink, meta_of, take_scan
from .lazyjson import msgspec_decode
from .model import Trace
from .normalise import EventSink
from .parse import _ERRORS, _GZIP_MAGIC, PIECE, Inflater, check_memory, gzip_size

LOW = 1 << 16
"""Bytes read ahead of each event before the scanner reads it (its window holds 16 times
as many): events are far shorter; tests make it small to cut events at every byte."""

HEAD_MOST = 64 << 20
"""How far into the document the event array must start (Kineto writes it first but for
the device properties, a few kilobytes)."""


def load_streaming(name: str, data: bytes | bytearray) -> Trace | None:
    """The trace in gzipped ``data``, read as it inflates; ``None``: read it whole instead.
    Raises :class:`~.errors.TraceError` when it is too large to analyse whole."""
    size = gzip_size(data, exact=True)
    if accel.native is None or data[:2] != _GZIP_MAGIC or size is None:
        return None
    check_memory(name, size)  # as the whole read checks it, before any of it is read
    enabled = gc.isenabled()
    gc.disable()  # the spans cannot be garbage yet (see fastload.load_fast)
    try:
        return read_stream(name, Inflater(data))
    except _ERRORS:
        return None  # corrupt: the whole read words it
    finally:
        if enabled:
            gc.enable()


def read_stream(name: str, read: Inflater, low: int = LOW) -> Trace | None:
    """:func:`load_streaming` of the document ``read`` inflates (``None`` also without the
    C scanner)."""
    native = accel.native
    if native is None:
        return None
    head = bytearray()
    found = None
    while found is None and len(head) < HEAD_MOST:
        piece = read(PIECE)
        if not piece:
            return None
        head += piece
        opening = bytes(head.lstrip()[:1])
        if opening not in (b"", b"{"):
            return None  # an array of events alone, or not JSON: the whole read takes it
        found = _KEY.search(head)
    if found is None:
        return None
    lo = found.end() - 1
    sink = EventSink()
    array = memoryview(head)[lo:]
    done = native.scan_stream(read, array, sink, _SCAN_CONSTANTS, msgspec_decode, low)
    array.release()
    if done is None:
        return None
    tail = done[4] + read.rest()
    meta = meta_of(bytes(head[:lo]), tail) if read.complete else None
    if meta is None:
        return None
    return finish_sink(name, sink, meta, take_scan(sink, done))
