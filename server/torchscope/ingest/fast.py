"""The fast reader: the C scanner (``_native.scan_stream``) over the document as it is read.

Every input form streams: a plain ``.json`` read a megabyte at a time, a ``.json.gz`` (one
member or several, of any size) inflated as it is read (:class:`~.source.Document`), and a
bare array of events. The scanner reads the event array through a reused window of about a
megabyte; each span's args (a quarter of the bytes) are set aside in a temporary file
(:func:`args_file`) that its ``Args`` reads back when asked, so neither the document nor the
args are ever held whole.

The document is what the reference reader would parse: the bytes before the first
``"traceEvents": [`` and after the array's closing bracket must make, with ``null`` for
the events, an object (:func:`meta_of`). Anything else (no C scanner, a document the scanner
hands back: odd field types, escapes, invalid JSON) returns ``None``, and the caller reads
the trace with the reference reader, which words every error.
"""

from __future__ import annotations

import gc
import re
import tempfile
from typing import IO, Any

from . import accel
from .errors import TraceError
from .sink import EventSink
from .source import Document
from .values import decode_json

LOW = 1 << 16
"""Bytes read ahead of each event before the scanner reads it (its window holds 16 times
as many): events are far shorter; tests make it small to cut events at every byte."""

HEAD_MOST = 64 << 20
"""How far into the document the event array must start (Kineto writes it first but for
the device properties, a few kilobytes)."""

PIECE = 1 << 20
"""Bytes read at a time while looking for the event array."""

_KEY = re.compile(rb'"traceEvents"\s*:\s*\[')


def meta_of(head: bytes, tail: bytes) -> dict[str, Any] | None:
    """The document's keys other than ``traceEvents``, when it is ``head``, the event
    array, then ``tail`` (``None`` when, with ``null`` for the events, it is not an object
    whose ``traceEvents`` is that ``null``)."""
    try:
        meta = decode_json(head + b"null" + tail)
    except ValueError:
        return None
    if not isinstance(meta, dict) or meta.get("traceEvents", 0) is not None:
        return None
    del meta["traceEvents"]
    return meta


def _find_array(document: Document) -> tuple[bytearray, int, bool] | None:
    """The bytes read up to and past the event array's opening bracket, where it opens, and
    whether the document is a bare array of events; ``None``: not found."""
    head = bytearray()
    while len(head) < HEAD_MOST:
        piece = document(PIECE)
        if not piece:
            return None
        head += piece
        blank = len(head) - len(head.lstrip())
        opening = bytes(head[blank : blank + 1])
        if opening == b"[":
            return head, blank, True  # the Chrome "JSON Array Format": only events
        if opening not in (b"", b"{"):
            return None  # not JSON: the reference reader words it
        found = _KEY.search(head)
        if found is not None:
            return head, found.end() - 1, False
    return None


def args_file(name: str) -> IO[bytes]:
    """The temporary file (already unlinked) the scanner sets the args bytes aside in; it
    goes when the last span of the trace does."""
    try:
        return tempfile.TemporaryFile(prefix="torchscope-args-")
    except OSError as exc:
        raise TraceError(
            f"{name}: torchscope sets each event's args aside in a temporary file while it "
            f"reads a trace, and cannot create one in {tempfile.gettempdir()} "
            f"({exc.strerror or exc}); set TMPDIR to a writable folder"
        ) from None


def _no_room(name: str, exc: OSError, document: Document) -> TraceError:
    return TraceError(
        f"{name}: no room to set the trace's args aside in {tempfile.gettempdir()} "
        f"({exc.strerror or exc}) after {document.size >> 20} MiB of the trace; they take "
        "about a quarter of its JSON size: free that much there, or set TMPDIR to a folder "
        "with room"
    )


def scan(document: Document, sink: EventSink, low: int = LOW) -> tuple[dict[str, Any], int] | None:
    """Fill ``sink`` from ``document``: the document's metadata and the count of array
    entries that were not events; ``None`` when the C scanner is not built or does not take
    this document (``sink`` is then partly filled: drop it)."""
    native = accel.native
    if native is None:
        return None
    accel.configure(sink.model)
    found = _find_array(document)
    if found is None:
        return None
    head, lo, bare = found
    enabled = gc.isenabled()
    gc.disable()  # the spans built here cannot be garbage yet; collections would only cost
    try:
        array = memoryview(head)[lo:]
        # not closed here: the Args read it until the last of them goes, which closes it
        spill = args_file(document.name)
        try:
            done = native.scan_stream(document, array, sink, spill, low, sink.window)
        except OSError as exc:
            if exc.filename != spill.name:
                raise  # reading the trace, not writing its args
            raise _no_room(document.name, exc, document) from None
        array.release()
    finally:
        if enabled:
            gc.enable()
    if done is None:
        return None
    tail = bytes(done[4]) + document.rest()
    meta = ({} if not tail.strip() else None) if bare else meta_of(bytes(head[:lo]), tail)
    if meta is None:
        return None
    not_events = sink.take_scan(done)
    if not_events == 0 and sink.empty():
        return None  # nothing at all: the reference reader words it
    return meta, not_events
