"""Read a trace file into Python objects, turning every way it can fail into a TraceError.

Kineto writes Chrome-trace JSON, gzipped when the name ends in ``.gz``; we sniff the gzip
magic instead of trusting the name. ``json.loads`` is the floor of what any analysis costs,
so the garbage collector is paused while it builds ~200k small dicts (collection passes over
objects that cannot be garbage yet would add about a third to the parse).
"""

from __future__ import annotations

import gc
import os
import zlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .errors import TraceError

if TYPE_CHECKING:
    import json

_GZIP_MAGIC = b"\x1f\x8b"
_MAX_RATIO = 40
"""Largest uncompressed/compressed ratio for which the gzip trailer's size is trusted."""
_HINT = "re-export it with torch.profiler's export_chrome_trace (or prof.export_chrome_trace)"


def read_bytes(path: str | os.PathLike[str]) -> bytearray:
    """Return the (still compressed, if gzipped) bytes of ``path``, read straight into a
    mutable buffer: the fast parser decodes a plain ``.json`` in place (``fastload.chunks``),
    so a big file is never held twice."""
    name = os.fspath(path)
    try:
        with open(name, "rb") as fh:
            out = bytearray(os.fstat(fh.fileno()).st_size)
            got = fh.readinto(out)
            if got < len(out):
                del out[got:]
            rest = fh.read()  # a file that grew meanwhile
            if rest:
                out += rest
            return out
    except FileNotFoundError:
        raise TraceError(f"{name}: no such file; check the path") from None
    except IsADirectoryError:
        raise TraceError(f"{name}: is a directory; pass one .json or .json.gz trace file") from None
    except OSError as exc:
        raise TraceError(
            f"{name}: cannot be read ({exc.strerror or exc}); check its permissions"
        ) from None


PIECE = 1 << 20
"""Output bytes inflated per call (the streaming scan's window asks for its own). Each piece
is copied into the final buffer and freed, so the next one reuses its memory: 1 MiB pieces
fault in only the final buffer's pages (17k for a 54 MB trace, against 30k with 16 MiB
pieces, which malloc maps afresh each time)."""


def gzip_size(data: bytes | bytearray, exact: bool = False) -> int | None:
    """The uncompressed size the gzip trailer names (ISIZE, the size mod 2**32), when it is
    plausible for JSON (Kineto traces compress 10-20×): a truncated file ends in arbitrary
    bytes, and no garbage size may allocate gigabytes. With ``exact``, also only when the
    file is too small for the size to have wrapped past 4 GiB."""
    size = int.from_bytes(data[-4:], "little")
    if len(data) < 18 or not 0 < size <= _MAX_RATIO * len(data):
        return None
    if exact and _MAX_RATIO * len(data) >= 2**32:
        return None
    return size


def _gunzip(data: bytes | bytearray) -> bytearray:
    """Inflate into a mutable buffer of the final size, read from the gzip trailer, a piece
    at a time (so the output is never held twice, as ``bytearray(zlib.decompress(…))`` would).

    Without the size, the output buffer doubles its way up to ~50 MB, copying as it goes,
    and the CRC is checked in a second pass: a third of the time. ``zlib`` checks the CRC
    while inflating. It stops after the first gzip member, so when its output does not
    have the size the trailer names (a multi-member file), ``gzip.decompress`` reads them all.
    """
    size = gzip_size(data)
    if size is None:
        return bytearray(_gzip().decompress(data))
    out = bytearray(size)
    read = Inflater(data)
    pos = 0
    try:
        piece = read(PIECE)
        while piece:
            out[pos : pos + len(piece)] = piece
            pos += len(piece)
            piece = read(PIECE)
    except _ERRORS:
        return bytearray(zlib.decompress(data, 16 + zlib.MAX_WBITS, size))
    if not read.eof:  # truncated: zlib's error, as before
        return bytearray(zlib.decompress(data, 16 + zlib.MAX_WBITS, size))
    if pos % 2**32 != size or len(out) != pos or not read.complete:
        return bytearray(_gzip().decompress(data))  # more than one gzip member
    return out


def _gunzip_bytes(data: bytes | bytearray) -> bytes:
    """Inflate into one ``bytes`` object, which the inflater grows in place (``realloc``
    moves no pages); the same errors and the same multi-member fallback as :func:`_gunzip`."""
    inflate = _decompressobj()
    try:
        out: bytes = inflate.decompress(data)
    except _ERRORS:
        inflate = None
    if inflate is None or not inflate.eof:  # corrupt or truncated: zlib's error, as before
        return zlib.decompress(data, 16 + zlib.MAX_WBITS)
    if inflate.unused_data:
        return bytes(_gzip().decompress(data))  # more than one gzip member
    return out


def _gzip() -> Any:
    """The stdlib ``gzip`` module, imported only for the rare trace that needs it (the
    imports are a sixth of analysing a 54 MB trace; ``json`` is imported likewise)."""
    import gzip

    return gzip


def _decompressobj() -> Any:
    """A gzip inflater: ISA-L's (``isal``, twice as fast) when installed, else zlib's."""
    try:
        from isal import isal_zlib
    except ImportError:
        return zlib.decompressobj(16 + zlib.MAX_WBITS)
    return isal_zlib.decompressobj(16 + zlib.MAX_WBITS)


def _isal_errors() -> tuple[type[Exception], ...]:
    try:
        from isal import isal_zlib
    except ImportError:
        return (zlib.error,)
    return (zlib.error, isal_zlib.error)  # type: ignore[return-value]


_ERRORS = _isal_errors()

FEED = 1 << 18
"""Compressed bytes handed to the inflater at a time (its ``unconsumed_tail`` is a copy:
fed the whole file, each call would copy what remains of it)."""


class Inflater:
    """``read(n)``: up to ``n`` more bytes of the gzipped document ``data`` (ISA-L's or zlib's
    inflater), ``b""`` at its end or where the data runs out; raises the inflater's errors
    (:data:`_ERRORS`) for corrupt data."""

    def __init__(self, data: bytes | bytearray, feed: int = FEED) -> None:
        self._inflate = _decompressobj()
        self._view = memoryview(data)
        self._feed = feed
        self._pos = 0
        self._pending: Any = b""

    def __call__(self, n: int) -> bytes:
        inflate = self._inflate
        while not inflate.eof:
            if not self._pending:
                if self._pos >= len(self._view):
                    return b""  # truncated: the caller words the error
                self._pending = self._view[self._pos : self._pos + self._feed]
                self._pos += self._feed
            piece: bytes = inflate.decompress(self._pending, max(1, n))
            self._pending = inflate.unconsumed_tail
            if piece:
                return piece
        return b""

    def rest(self) -> bytes:
        """Everything left to inflate."""
        return b"".join(iter(lambda: self(PIECE), b""))

    @property
    def eof(self) -> bool:
        """The gzip member ended (its CRC checked)."""
        return bool(self._inflate.eof)

    @property
    def complete(self) -> bool:
        """The one gzip member ended, with nothing after it."""
        return self.eof and not self._inflate.unused_data and self._pos >= len(self._view)


def decompress(name: str, data: bytes | bytearray, writable: bool = True) -> bytes | bytearray:
    """Gunzip ``data`` when it starts with the gzip magic; check it is not empty.

    With ``writable``, the result is a ``bytearray`` (``data`` itself when it is one and not
    gzipped), which the msgspec path decodes in place (``fastload.chunks``). Without, it may
    be ``bytes``: the C scanner only reads, and inflating straight into one ``bytes``
    (:func:`_gunzip_bytes`) skips the copy into a ``bytearray``, a third of the gunzip."""
    if not data:
        raise TraceError(
            f"{name}: the file is empty (0 bytes); the profiler did not finish writing it; {_HINT}"
        )
    if data[:2] == _GZIP_MAGIC:
        try:
            data = _gunzip(data) if writable else _gunzip_bytes(data)
        except (EOFError, OSError, zlib.error) as exc:  # OSError: gzip.BadGzipFile
            raise TraceError(
                f"{name}: the gzip data is truncated or corrupt ({exc}); the file was cut short "
                f"while being written or copied; {_HINT}"
            ) from None
        if not data:
            raise TraceError(f"{name}: the gzip archive holds an empty file; {_HINT}")
    if not writable or isinstance(data, bytearray):
        return data
    return bytearray(data)


def _looks_truncated(data: bytes | bytearray, exc: json.JSONDecodeError) -> bool:
    """A document that starts like JSON and fails exactly where the bytes run out."""
    body = data.strip()
    if body[:1] not in (b"{", b"["):
        return False
    if exc.pos >= len(body) - 1:
        return True
    # An unterminated string that runs to the end: no closing quote after it.
    return exc.msg.startswith("Unterminated string") and b'"' not in data[exc.pos + 1 :]


def parse_json(
    name: str, data: bytes | bytearray, object_hook: Callable[[dict[str, Any]], Any] | None = None
) -> Any:
    """``json.loads`` with the collector paused and errors named after the file;
    ``object_hook`` sees every JSON object as it is built (see ``json.loads``)."""
    import json

    enabled = gc.isenabled()
    gc.disable()
    try:
        return json.loads(data, object_hook=object_hook)
    except json.JSONDecodeError as exc:
        if _looks_truncated(data, exc):
            what = f"the JSON ends early (line {exc.lineno}): the file is truncated"
        else:
            what = f"not valid JSON ({exc.msg} at line {exc.lineno}, column {exc.colno})"
        raise TraceError(f"{name}: {what}; {_HINT}") from None
    except UnicodeDecodeError:
        raise TraceError(
            f"{name}: not a text file (not UTF-8 JSON); expected a Kineto .json or .json.gz trace"
        ) from None
    except RecursionError:
        raise TraceError(f"{name}: JSON nested too deeply to be a Kineto trace") from None
    finally:
        if enabled:
            gc.enable()


def events_of(name: str, doc: Any) -> tuple[dict[str, Any], list[Any]]:
    """``(top-level fields except traceEvents, the event list)`` of a parsed trace
    document; ``name`` is for messages."""
    if isinstance(doc, list):
        # The Chrome "JSON Array Format": no metadata, only events.
        events: Any = doc
        meta: dict[str, Any] = {}
    elif isinstance(doc, dict):
        events = doc.get("traceEvents")
        if events is None:
            keys = ", ".join(sorted(map(str, doc))[:6]) or "none"
            raise TraceError(
                f"{name}: not a Kineto trace: the JSON object has no 'traceEvents' list "
                f"(top-level keys: {keys}); expected a file written by torch.profiler"
            )
        meta = {k: v for k, v in doc.items() if k != "traceEvents"}
    else:
        raise TraceError(
            f"{name}: not a Kineto trace: the JSON is a {type(doc).__name__}, not an object "
            "with 'traceEvents'"
        )
    if not isinstance(events, list):
        raise TraceError(
            f"{name}: not a Kineto trace: 'traceEvents' is a {type(events).__name__}, not a list"
        )
    if not events:
        raise TraceError(
            f"{name}: the trace is empty ('traceEvents' has no events): the profiler recorded "
            "nothing; "
            "check that the profiled code ran inside the active steps of the schedule"
        )
    return meta, events


MEMORY_FACTOR = 3
"""Peak memory of analysing a whole trace, in multiples of its uncompressed size: measured
by bench/run_all.py on synthetic traces of 1M and 10M events, with some headroom."""

BOUND = 1.5
"""The most memory a whole-trace analysis of a large trace may take, in multiples of its
uncompressed size (issue 16). Whole-trace analysis needs :data:`MEMORY_FACTOR`, more than
this, so traces of :data:`LARGE_BYTES` or more are refused whole and analysed by steps."""

LARGE_BYTES = 1 << 30
"""Size of JSON from which :data:`BOUND` applies (below it, the fixed cost of the
interpreter is most of the memory, and a trace is analysed whole when it fits)."""


def _available_memory() -> int | None:
    """``MemAvailable`` in bytes (Linux), else ``None``."""
    try:
        with open("/proc/meminfo", "rb") as fh:
            for line in fh:
                if line.startswith(b"MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def check_memory(name: str, size: int, available: int | None = None) -> None:
    """Refuse, before parsing, a whole-trace analysis that would take more than
    :data:`BOUND` × the file's size (for traces of :data:`LARGE_BYTES` or more) or more
    memory than is available."""
    available = _available_memory() if available is None else available
    need = MEMORY_FACTOR * size
    gib = 2**30
    if size >= LARGE_BYTES and need > BOUND * size:
        why = (
            f"more than the bound of {BOUND:g}× the file's size kept for traces of "
            f"{LARGE_BYTES / gib:g} GiB or more"
        )
    elif available is not None and need > available:
        why = f"and {available / gib:.1f} GiB is available"
    else:
        return
    raise TraceError(
        f"{name}: too large to analyse whole: {size / gib:.1f} GiB of JSON needs about "
        f"{need / gib:.1f} GiB of memory ({MEMORY_FACTOR:g}× its size), {why}; analyse some "
        "steps of it with --steps FIRST-LAST (e.g. --steps 10-20), which needs about the "
        "file's size plus those steps' events"
    )
