"""Capture what the user's code prints during a job and forward it to the host's log.

Python-level writes to ``sys.stdout``/``sys.stderr`` are forwarded as ``Output`` frames (once:
not also to fd 2), batched so that a function printing inside a hot loop cannot flood the pipe,
and cut at 256 KiB per job with the rest counted. C-level writes go to fd 2, which the host
reads, caps the same way and logs.
"""

from __future__ import annotations

import sys
from types import TracebackType
from typing import Callable, Optional, TextIO

from torchscope.protocol import Output

#: Forward at most this much text per job; the rest is counted, not sent.
MAX_FORWARDED_CHARS = 256 * 1024
FLUSH_AT_CHARS = 4096


class _Tee:
    """A text stream that writes through to ``real`` and keeps a copy for forwarding."""

    def __init__(self, real: TextIO, stream: str, sink: OutputForwarder) -> None:
        self._real = real
        self._stream = stream
        self._sink = sink

    def write(self, text: str) -> int:
        self._sink.add(self._stream, text)  # forwarded once; not also to fd 2, which is logged
        return len(text)

    def flush(self) -> None:
        self._real.flush()

    def isatty(self) -> bool:
        return False

    @property
    def encoding(self) -> str:
        return getattr(self._real, "encoding", "utf-8")


class OutputForwarder:
    """Context manager installing the tees for the duration of one job."""

    def __init__(self, job_id: int, send: Callable[[Output], None]) -> None:
        self._job_id = job_id
        self._send = send
        self._buffer: list[tuple[str, str]] = []
        self._buffered = 0
        self._forwarded = 0
        self.dropped = 0
        self._saved: Optional[tuple[TextIO, TextIO]] = None

    def add(self, stream: str, text: str) -> None:
        room = MAX_FORWARDED_CHARS - self._forwarded - self._buffered
        if len(text) > room:  # a single huge write is cut too, not only the writes after it
            self.dropped += len(text) - max(room, 0)
            text = text[: max(room, 0)]
            if not text:
                return
        self._buffer.append((stream, text))
        self._buffered += len(text)
        if self._buffered >= FLUSH_AT_CHARS:
            self.flush()

    def flush(self) -> None:
        by_stream: dict[str, list[str]] = {}
        for stream, text in self._buffer:
            by_stream.setdefault(stream, []).append(text)
        self._buffer.clear()
        self._forwarded += self._buffered
        self._buffered = 0
        for stream, parts in by_stream.items():
            self._send(Output(job_id=self._job_id, stream=stream, text="".join(parts)))

    def __enter__(self) -> OutputForwarder:
        real_err = sys.__stderr__ or sys.stderr
        self._saved = (sys.stdout, sys.stderr)
        sys.stdout = _Tee(self._saved[0], "stdout", self)  # type: ignore[assignment]
        sys.stderr = _Tee(real_err, "stderr", self)  # type: ignore[assignment]
        return self

    def __exit__(
        self,
        exc_type: Optional[type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> None:
        if self._saved is not None:
            sys.stdout, sys.stderr = self._saved
        if self.dropped:
            self._buffer.append(
                (
                    "stderr",
                    f"\n[torchscope] … {_size(self.dropped)} more output not shown "
                    f"(the first {MAX_FORWARDED_CHARS // 1024} KiB were)\n",
                )
            )
        self.flush()


def _size(count: int) -> str:
    for unit, scale in (("GB", 1 << 30), ("MB", 1 << 20), ("KB", 1 << 10)):
        if count >= scale:
            return f"{count / scale:.1f} {unit}"
    return f"{count} characters"
