"""The agent's socket: one thread blocked in ``accept`` (no work while idle), one short-lived
thread per connection, each request served by ``agent/requests.py``.

Only the job's own user is answered: the socket is 0600 in a 0700 folder, and each connection's
peer credentials (``SO_PEERCRED``) are checked, so root or another uid that reaches the socket
is refused too. The socket file is removed when the job exits (``atexit``); a forked child
(a DataLoader worker) closes its inherited copy of the listening socket and removes nothing.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import socket
import struct
import sys
import threading
from pathlib import Path
from typing import Optional

from torchscope.agent.paths import THREAD_NAME, socket_path

_CREDENTIALS = struct.Struct("3i")  # struct ucred: pid, uid, gid


class Listener:
    """This process's agent: its socket at ``path``, served by a daemon thread."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.pid = os.getpid()
        self.started = _process_start()
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        if path.exists() or path.is_symlink():
            path.unlink()  # a stale socket of an earlier process with this pid
        old = os.umask(0o177)
        try:
            self.sock.bind(str(path))
        finally:
            os.umask(old)
        os.chmod(path, 0o600)
        self.sock.listen(8)
        self.thread = threading.Thread(target=self._serve, name=THREAD_NAME, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return  # closed: the job is exiting
            if not same_user(conn):
                _refuse(conn)
                continue
            threading.Thread(
                target=_connection,
                args=(conn, self.started),
                name=f"{THREAD_NAME}-client",
                daemon=True,
            ).start()

    def close(self) -> None:
        """Stop listening and remove the socket file (this process's only)."""
        if os.getpid() != self.pid:
            return
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_RDWR)  # wakes the accept
        self.sock.close()
        with contextlib.suppress(OSError):
            self.path.unlink()


def same_user(conn: socket.socket) -> bool:
    """Is the peer this process's user (its uid from the kernel, not from what it says)?"""
    try:
        raw = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, _CREDENTIALS.size)
    except (OSError, AttributeError):
        return False  # no peer credentials here: answer nobody
    _, uid, _ = _CREDENTIALS.unpack(raw)
    return bool(uid == os.getuid())


def _refuse(conn: socket.socket) -> None:
    from torchscope.protocol import JobError, encode

    uid = os.getuid()
    message = f"refused: this job (pid {os.getpid()}) answers its own user (uid {uid}) only"
    with contextlib.suppress(OSError):
        conn.sendall(encode(JobError(0, "refused", message)))
    conn.close()


def _connection(conn: socket.socket, started: float) -> None:
    from torchscope.agent.requests import serve

    with conn:
        try:
            serve(conn, started)
        except Exception as exc:  # the job comes first: a broken request ends its connection
            print(f"torchscope agent: {type(exc).__name__}: {exc}", file=sys.stderr)


def _process_start() -> float:
    """When this process started (epoch seconds), from ``/proc``; now when unknown."""
    import time

    try:
        ticks = int(Path(f"/proc/{os.getpid()}/stat").read_text().rsplit(")", 1)[1].split()[19])
        boot = next(
            float(line.split()[1])
            for line in Path("/proc/stat").read_text().splitlines()
            if line.startswith("btime")
        )
        return boot + ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError, StopIteration):
        return time.time()


_LISTENER: Optional[Listener] = None
_LOCK = threading.Lock()


def start(folder: Optional[str] = None) -> str:
    """Start the agent unless this process has one; its socket's path."""
    global _LISTENER
    with _LOCK:
        if _LISTENER is None or _LISTENER.pid != os.getpid():
            _LISTENER = Listener(socket_path(os.getpid(), folder))
            atexit.register(_LISTENER.close)
        return str(_LISTENER.path)


def current() -> Optional[Listener]:
    """This process's agent, if started."""
    return _LISTENER if _LISTENER is not None and _LISTENER.pid == os.getpid() else None


def _after_fork() -> None:
    global _LISTENER
    if _LISTENER is not None:
        with contextlib.suppress(OSError):
            _LISTENER.sock.close()  # the parent's socket: not ours to serve or remove
        _LISTENER = None


os.register_at_fork(after_in_child=_after_fork)
