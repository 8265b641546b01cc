"""The worker's end of the protocol pipe, protected from the user's code.

Before any user code runs, the protocol file descriptors are duplicated and fd 0/1 are
re-pointed (stdin at /dev/null, stdout at stderr): a ``print`` — from Python or from C — then
lands in the log instead of in the middle of a frame.
"""

from __future__ import annotations

import os
import sys
import threading
from typing import Optional

from torchscope.protocol import FrameDecoder, Message, encode


class Channel:
    """Send and receive whole messages on two private file descriptors."""

    def __init__(self, read_fd: int, write_fd: int) -> None:
        self._read_fd = read_fd
        self._write_fd = write_fd
        self._decoder = FrameDecoder()
        self._pending: list[Message] = []
        self._lock = threading.Lock()

    @classmethod
    def take_over_stdio(cls) -> Channel:
        """Move the protocol off fd 0/1 so nothing the user's code does can reach it."""
        read_fd = os.dup(0)
        write_fd = os.dup(1)
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)
        os.close(devnull)
        sys.stdout.flush()
        os.dup2(2, 1)  # fd 1 now writes to stderr, which the host logs
        sys.stdout = os.fdopen(
            1, "w", buffering=1, encoding="utf-8", errors="replace", closefd=False
        )
        sys.stdin = open(os.devnull, encoding="utf-8")  # noqa: SIM115 - lives as long as the process
        return cls(read_fd, write_fd)

    def send(self, message: Message) -> None:
        frame = encode(message)
        with self._lock:
            view = memoryview(frame)
            while view:
                written = os.write(self._write_fd, view)
                view = view[written:]

    def receive(self) -> Optional[Message]:
        """Block for the next message; None when the host closed the pipe."""
        while not self._pending:
            chunk = os.read(self._read_fd, 65536)
            if not chunk:
                return None
            self._pending.extend(self._decoder.feed(chunk))
        return self._pending.pop(0)
