"""Reading a trace's bytes, turning every way it can fail into a TraceError.

Kineto writes Chrome-trace JSON, gzipped when the name ends in ``.gz``; we sniff the gzip
magic instead of trusting the name. :class:`Document` gives the document a piece at a time,
inflating as it goes (the fast reader streams it); :func:`read_whole` gives it whole, and
:func:`parse_json` parses it with stdlib ``json`` (the reference reader), the garbage
collector paused while it builds ~200k small dicts.
"""

from __future__ import annotations

import errno
import gc
import gzip
import io
import os
import stat
import zlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, BinaryIO, Union

from torchscope.files import kind_of

from .errors import TraceError
from .memory import CHECK_EVERY, check_memory

if TYPE_CHECKING:
    import json

_GZIP_MAGIC = b"\x1f\x8b"
_BOM = b"\xef\xbb\xbf"
_BLANKS = b" \t\r\n"
_HINT = "re-export it with torch.profiler's export_chrome_trace (or prof.export_chrome_trace)"


_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
"""Non-blocking, so opening a FIFO returns at once (to be refused) instead of waiting."""

Source = Union[str, "os.PathLike[str]", bytes, bytearray]
"""A trace: a file's path, or the file's bytes (still gzipped, if they are)."""


def open_file(source: Source, name: str) -> BinaryIO:
    """The trace's bytes as a binary file; every way opening can fail is a TraceError.
    Only a regular file is read: a FIFO, socket or device is refused before any read, so
    nothing waits on a writer that never comes (opened non-blocking, checked with fstat)."""
    if isinstance(source, (bytes, bytearray)):
        return io.BytesIO(source)
    try:
        fd = os.open(source, _OPEN_FLAGS)
    except OSError as exc:
        if exc.errno == errno.ENOENT:
            from torchscope.host.trace_store import removed_note

            note = removed_note(os.fspath(source))  # trace retention took it: say so
            if note:
                raise TraceError(f"{name}: {note}") from None
        raise _open_error(name, exc) from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise _not_regular(name, mode)
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def _open_error(name: str, exc: OSError) -> TraceError:
    """The words for an ``open`` that failed, by errno."""
    why = {
        errno.ENOENT: "no such file; check the path",
        errno.EISDIR: "is a directory; pass one .json or .json.gz trace file",
        errno.ENOTDIR: "a part of the path before the file name is a file, not a folder; "
        "check the path",
        errno.ELOOP: "a symbolic link loop (a link that points back to itself); point the "
        "link at the trace file",
        errno.EACCES: "permission denied; make the file readable (chmod +r) or copy it",
        errno.EPERM: "permission denied; make the file readable (chmod +r) or copy it",
        errno.ENAMETOOLONG: "the path is too long; check the path",
    }.get(exc.errno or 0)
    if why is None:
        why = f"cannot be read ({exc.strerror or exc}); check the path and its permissions"
    return TraceError(f"{name}: {why}")


def _not_regular(name: str, mode: int) -> TraceError:
    if stat.S_ISDIR(mode):
        return _open_error(name, IsADirectoryError(errno.EISDIR, "Is a directory"))
    return TraceError(
        f"{name}: is {kind_of(mode)}, not a regular file; save the trace to a file first and pass "
        "that .json or .json.gz file"
    )


def _corrupt(name: str, exc: object) -> TraceError:
    return TraceError(
        f"{name}: the gzip data is truncated or corrupt ({exc}); the file was cut short "
        f"while being written or copied; {_HINT}"
    )


def _empty(name: str) -> TraceError:
    return TraceError(
        f"{name}: the file is empty (0 bytes); the profiler did not finish writing it; {_HINT}"
    )


def _bomb(name: str, fed: int, size: int) -> TraceError:
    mib = 1 << 20
    return TraceError(
        f"{name}: a gzip bomb, not a trace: {fed / mib:.1f} MB of gzip data inflated to more "
        f"than {size / mib:.0f} MB ({size // max(fed, 1)}× and still growing; torch.profiler "
        "traces compress 10-30×); it was refused before it could fill the memory; check "
        "where the file came from, or re-export the trace with torch.profiler"
    )


_MAX_RATIO = 40
"""Largest uncompressed/compressed ratio for which the gzip trailer's size is trusted."""

PIECE = 1 << 20
"""Bytes a :meth:`Document.rest` asks for at a time."""

BOMB_RATIO = 200
"""Inflated ÷ compressed size above which a gzip stream is a bomb, not a trace: Kineto
traces compress 10-30× (the test corpus: 17-30×); zeros or blanks compress 1000×."""

BOMB_FLOOR = 64 << 20
"""Inflated bytes before :data:`BOMB_RATIO` is checked (small files may compress more)."""


class Document:
    """``read(n)``: up to ``n`` more bytes of the trace document, inflated as they are read
    when the file is gzipped (every member of a multi-member file, any size); ``b""`` at its
    end. Raises :class:`TraceError` for a file that is empty, or gzip data that is corrupt,
    truncated or followed by garbage."""

    def __init__(self, fh: BinaryIO, name: str) -> None:
        self._fh = fh
        self.name = name
        head = fh.read(2)
        if not head:
            raise _empty(name)
        self.gzipped = head == _GZIP_MAGIC
        self._pending: bytes = head
        self._counted = _Counted(fh)
        """The file as the gzip reader reads it, counting the compressed bytes it took."""
        self._inflated: BinaryIO | None = None
        """The gzip reader, made at the first read (:meth:`expected_size` may seek the file
        before)."""
        self.size = 0
        """Document bytes read so far."""
        self.bounded = False
        """Check, every :data:`~.memory.CHECK_EVERY` bytes read, that the document read so far
        fits in memory (:func:`~.memory.check_memory`): for a size :meth:`expected_size`
        could not tell beforehand, or a gzip file's (its trailer names only the last
        member's size)."""
        self._check_at = CHECK_EVERY

    def __call__(self, n: int) -> bytes:
        piece = self._gz(n) if self.gzipped else self._plain(n)
        self.size += len(piece)
        fed = self._counted.count
        if self.gzipped and self.size > BOMB_FLOOR and self.size > BOMB_RATIO * fed:
            raise _bomb(self.name, fed, self.size)
        if self.bounded and self.size >= self._check_at:
            check_memory(self.name, self.size, so_far=True)
            self._check_at = self.size + CHECK_EVERY
        return piece

    def expected_size(self) -> int | None:
        """The document's size, when the file tells it before it is read: a plain file's
        size, or what a gzip file's trailer names when it is plausible for JSON (Kineto
        traces compress 10-20×; the trailer holds the size mod 2**32, and a truncated file
        ends in arbitrary bytes)."""
        try:
            here = self._fh.tell()
            total = self._fh.seek(0, os.SEEK_END)
            if self.gzipped and total >= 18:
                self._fh.seek(total - 4)
                size = int.from_bytes(self._fh.read(4), "little")
            self._fh.seek(here)
        except (OSError, ValueError):
            return None
        if not self.gzipped:
            return total
        if total < 18 or not 0 < size <= _MAX_RATIO * total or _MAX_RATIO * total >= 2**32:
            return None
        return size

    def _plain(self, n: int) -> bytes:
        if self._pending:
            piece, self._pending = self._pending + self._fh.read(max(0, n - 2)), b""
            return piece
        return self._fh.read(max(1, n))

    def _gz(self, n: int) -> bytes:
        try:
            if self._inflated is None:
                self._fh.seek(self._fh.tell() - len(self._pending))  # the magic read at open
                self._pending = b""
                self._inflated = _gzip_reader(self._counted)
            return self._inflated.read(max(1, n))
        except _ERRORS as exc:
            raise _corrupt(self.name, _gzip_damage(self._fh) or exc) from None

    def rest(self) -> bytes:
        """Everything left to read."""
        return b"".join(iter(lambda: self(PIECE), b""))

    def json_text(self) -> bytearray:
        """Everything left, for a JSON parser that needs it whole, grown in place (one copy in
        memory, not the pieces and their join); a document whose first byte past blanks and
        a BOM cannot start JSON is handed back as soon as that byte is read, so its error
        costs one piece of memory, not the file's size (2 GB of NULs)."""
        data, started = bytearray(), False
        for piece in iter(lambda: self(PIECE), b""):
            data += piece
            if not started:
                body = (piece[3:] if data[:3] == piece[:3] == _BOM else piece).lstrip(_BLANKS)
                started = bool(body)
                if started and body[:1] not in (b"{", b"["):
                    return data
        return data


class _Counted(io.RawIOBase):
    """``fh`` as a raw stream that counts the bytes read through it."""

    def __init__(self, fh: BinaryIO) -> None:
        self._fh = fh
        self.count = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        got = self._fh.readinto(buffer)  # type: ignore[attr-defined]
        self.count += got or 0
        return int(got or 0)


def _gzip_reader(raw: io.RawIOBase) -> BinaryIO:
    """Every member of the gzip stream ``raw``, inflated: by ISA-L (``isal``, twice zlib's
    speed; its reader inflates straight into the buffer it returns) when installed, else by
    stdlib ``gzip``."""
    try:
        from isal import igzip
    except ImportError:
        return gzip.GzipFile(fileobj=raw, mode="rb")  # type: ignore[return-value]
    return igzip.IGzipFile(fileobj=raw, mode="rb")  # type: ignore[no-untyped-call,return-value]


def _gzip_damage(fh: BinaryIO) -> str | None:
    """For a gzip file that failed to inflate: ``"trailing garbage after the gzip data"``
    when bytes that do not start another member follow a complete member (``None``: the
    damage is inside a member). Inflates the file again, keeping nothing: errors only."""
    fh.seek(0)
    inflate: Any = zlib.decompressobj(16 + zlib.MAX_WBITS)
    pending = b""
    while True:
        if not pending:
            pending = fh.read(PIECE)
            if not pending:
                return None
        if inflate.eof:
            if pending[:2] != _GZIP_MAGIC[: len(pending[:2])]:
                return "trailing garbage after the gzip data"
            inflate = zlib.decompressobj(16 + zlib.MAX_WBITS)
        try:
            inflate.decompress(pending, PIECE)
        except zlib.error:
            return None
        pending = inflate.unconsumed_tail or inflate.unused_data


def _gzip_errors() -> tuple[type[Exception], ...]:
    errors: tuple[type[Exception], ...] = (zlib.error, gzip.BadGzipFile, EOFError)
    try:
        from isal import isal_zlib
    except ImportError:
        return errors
    return (*errors, isal_zlib.error)  # type: ignore[arg-type]


_ERRORS = _gzip_errors()



def empty_archive(name: str) -> TraceError:
    """The error for a gzip file that holds an empty document."""
    return TraceError(f"{name}: the gzip archive holds an empty file; {_HINT}")


def open_document(fh: BinaryIO, name: str, bounded: bool) -> Document:
    """The document in ``fh``; ``bounded``: refuse one too large to analyse whole in the
    memory there is (:func:`~.memory.check_memory`), before it is read where its size can be
    told, else as it is read."""
    document = Document(fh, name)
    if bounded:
        size = document.expected_size()
        if size is not None:
            check_memory(name, size)
        document.bounded = size is None or document.gzipped
    return document


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
    except ValueError as exc:  # beyond JSONDecodeError: e.g. an integer of 5,000 digits
        what = str(exc).split(";")[0]
        raise TraceError(
            f"{name}: not a Kineto trace: a number too long to read ({what}); {_HINT}"
        ) from None
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
