"""The profiler's chatter kept out of a notebook's output.

A notebook's jobs run in the kernel's own process, so what torch's C++ side prints during a job
(Kineto's ``USDT:… profiler_start`` lines) goes straight to fd 2, which the kernel shows under
the cell. For the length of a job fd 2 is a pipe: a thread reads it line by line, gives the
profiler's chatter (``torchscope/chatter.py``'s predicate, the one the host uses on a worker's
stderr) to the job's log, and writes every other line through to the real fd 2, unchanged.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
from collections.abc import Iterator

from torchscope.chatter import is_profiler_chatter, log_chatter


def _pump(source: int, sink: int) -> None:
    with os.fdopen(source, "rb", buffering=0) as pipe:
        pending = b""
        while True:
            chunk = pipe.read(65536)
            if not chunk:
                break
            *lines, pending = (pending + chunk).split(b"\n")
            for line in lines:
                _pass(line + b"\n", sink)
        if pending:
            _pass(pending, sink)


def _pass(line: bytes, sink: int) -> None:
    text = line.decode("utf-8", "replace")
    if is_profiler_chatter(text):
        log_chatter(text)
        return
    with contextlib.suppress(OSError):
        os.write(sink, line)


@contextlib.contextmanager
def chatter_filtered() -> Iterator[None]:
    """fd 2 through the filter while the block runs (a no-op where fd 2 cannot be swapped)."""
    try:
        sys.stderr.flush()
        real = os.dup(2)
    except (OSError, ValueError):
        yield
        return
    source, drain = os.pipe()
    os.dup2(drain, 2)
    os.close(drain)
    reader = threading.Thread(target=_pump, args=(source, real), daemon=True)
    reader.start()
    try:
        yield
    finally:
        with contextlib.suppress(OSError, ValueError):
            sys.stderr.flush()
        os.dup2(real, 2)  # the pipe's last writer closes (unless a child the job left holds it)
        reader.join(timeout=5)
        if not reader.is_alive():
            os.close(real)
