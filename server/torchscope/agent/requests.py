"""The requests an agent serves on one connection: ``AgentHello`` (what the job is),
``AttachRequest`` (profile the job's next calls or steps: ``agent/capture.py``) and
``CancelAttach``. Frames are ``protocol``'s. While an attach waits for the job's calls this
thread watches the connection: a cancel, or the client gone (EOF), stops the capture and puts
the function back; progress the job's thread queued is sent from here, so a slow client never
holds the job up.
"""

from __future__ import annotations

import os
import select
import socket
import sys
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Optional

from torchscope.agent.paths import THREAD_NAME
from torchscope.protocol import (
    AgentHello,
    AgentInfo,
    AttachRequest,
    CancelAttach,
    FrameDecoder,
    JobError,
    Message,
    ProtocolError,
    encode,
)

if TYPE_CHECKING:
    from torchscope.agent.capture import Capture

_BUSY = threading.Lock()  # one attach at a time in a job
#: How often the waiting thread looks at the connection and the queued progress.
POLL_S = 0.1
_PATCHED: list[str] = []  # the targets wrapped right now (``AgentInfo.patched``)


class Channel:
    """One client's connection: whole messages in, frames out."""

    def __init__(self, conn: socket.socket) -> None:
        self.conn = conn
        self.decoder = FrameDecoder()
        self.pending: list[Message] = []

    def send(self, message: Message) -> None:
        self.conn.sendall(encode(message))

    def receive(self, timeout: Optional[float]) -> Optional[Message]:
        """The next message; None when none came within ``timeout``; EOFError: gone."""
        while not self.pending:
            if timeout is not None:
                ready, _, _ = select.select([self.conn], [], [], timeout)
                if not ready:
                    return None
            chunk = self.conn.recv(1 << 16)
            if not chunk:
                raise EOFError
            self.pending.extend(self.decoder.feed(chunk))
        return self.pending.pop(0)


def serve(conn: socket.socket, started: float) -> None:
    """Answer requests until the client closes the connection."""
    channel = Channel(conn)
    while True:
        try:
            _answer(channel, channel.receive(None), started)
        except (EOFError, OSError, ProtocolError):
            return  # the client closed the connection, or sent no frames


def _answer(channel: Channel, message: Optional[Message], started: float) -> None:
    if isinstance(message, AgentHello):
        channel.send(job_info(started))
    elif isinstance(message, AttachRequest):
        attach(channel, message)
    elif not isinstance(message, CancelAttach):  # a cancel with nothing running: done
        what = type(message).__name__
        channel.send(JobError(0, "request", f"the agent does not serve {what} requests"))


def job_info(started: float) -> AgentInfo:
    """What ``torchscope jobs`` shows of this job (``started``: the process's start)."""
    torch = sys.modules.get("torch")
    rank, world = _rank()
    return AgentInfo(
        pid=os.getpid(),
        ppid=os.getppid(),
        argv=list(getattr(sys, "orig_argv", sys.argv)),
        cwd=os.getcwd(),
        python_version=sys.version.split()[0],
        started=started,
        torch_version=getattr(torch, "__version__", None) if torch is not None else None,
        device=_device(torch),
        rank=rank,
        world_size=world,
        functions=workspace_functions(Path.cwd()),
        patched=list(_PATCHED),
        agent_threads=sum(t.name.startswith(THREAD_NAME) for t in threading.enumerate()),
    )


def _rank() -> tuple[Optional[int], Optional[int]]:
    """(rank, world size) under torch.distributed (initialised, else torchrun's environment)."""
    dist = sys.modules.get("torch.distributed")
    try:
        if dist is not None and dist.is_available() and dist.is_initialized():
            return int(dist.get_rank()), int(dist.get_world_size())
    except Exception:
        pass
    rank, world = os.environ.get("RANK"), os.environ.get("WORLD_SIZE")
    if rank is not None and rank.isdigit():
        return int(rank), int(world) if world and world.isdigit() else None
    return None, None


def _device(torch: object) -> str:
    cuda = getattr(torch, "cuda", None)
    try:
        return "cuda" if cuda is not None and cuda.is_initialized() else "cpu"
    except Exception:
        return "cpu"


#: At most this many functions in ``AgentInfo.functions``.
MAX_FUNCTIONS = 500


def workspace_functions(root: Path) -> list[str]:
    """``FILE::QUALNAME`` of the functions and methods the job has loaded from files under
    ``root`` (its working directory), read from the loaded modules, never from code run."""
    import types

    found: list[str] = []
    prefix = str(root.resolve()) + os.sep
    installed = tuple({sys.prefix, sys.base_prefix, sys.exec_prefix})
    for module in list(sys.modules.values()):
        origin = getattr(module, "__file__", None)
        if not isinstance(origin, str) or not os.path.abspath(origin).startswith(prefix):
            continue
        if os.path.abspath(origin).startswith(installed) or "-packages" + os.sep in origin:
            continue  # an installed package, not the workspace's
        relative = os.path.relpath(os.path.abspath(origin), root)
        for value in list(vars(module).values()):
            owned = getattr(value, "__module__", None) == module.__name__
            if isinstance(value, types.FunctionType) and owned:
                found.append(f"{relative}::{value.__qualname__}")
            elif isinstance(value, type) and owned:
                found += [
                    f"{relative}::{value.__qualname__}.{n}"
                    for n, v in list(vars(value).items())
                    if isinstance(v, (types.FunctionType, staticmethod, classmethod))
                ]
        if len(found) >= MAX_FUNCTIONS:
            break
    return sorted(set(found))[:MAX_FUNCTIONS]


def attach(channel: Channel, request: AttachRequest) -> None:
    """One ``AttachRequest``: install the capture, wait for it while watching the client,
    reply, and always put the function back. A failure of the agent's own code is the reply
    (``JobError`` kind ``agent``), never the job's."""
    if not _BUSY.acquire(blocking=False):
        channel.send(JobError(request.job_id, "busy", "another attach is running in this job"))
        return
    try:
        reply = _captured(channel, request)
    except (OSError, ProtocolError):
        reply = None  # the client is gone: nothing to tell
    except Exception as exc:
        reply = JobError(request.job_id, "agent", f"the agent failed: {type(exc).__name__}: {exc}")
    finally:
        _BUSY.release()
    if reply is not None:
        channel.send(reply)


def _captured(channel: Channel, request: AttachRequest) -> Optional[Message]:
    from torchscope.agent.capture import AttachFailed

    try:
        capture = new_capture(request)
    except AttachFailed as failed:
        return JobError(request.job_id, failed.kind, str(failed))
    _PATCHED.append(capture.name)
    try:
        capture.install()
        return _wait(channel, capture, request)
    finally:
        capture.restore()
        _PATCHED.remove(capture.name)


def _wait(channel: Channel, capture: Capture, request: AttachRequest) -> Optional[Message]:
    """The reply once the capture is done, failed, cancelled or timed out (None: the client
    is gone, nothing to send)."""
    deadline = time.monotonic() + request.timeout_s
    while not capture.done.wait(POLL_S):
        for progress in capture.drain():
            channel.send(progress)
        try:
            message = channel.receive(0)
        except (EOFError, OSError, ProtocolError):
            capture.cancel("the client went away")
            return None
        if isinstance(message, CancelAttach):
            capture.cancel("cancelled")
            return JobError(request.job_id, "cancelled", f"cancelled: {capture.name} restored")
        if time.monotonic() > deadline:
            capture.cancel("timeout")
            return JobError(request.job_id, "timeout", capture.timeout_message(request.timeout_s))
    for progress in capture.drain():
        channel.send(progress)
    return capture.reply()


def new_capture(request: AttachRequest) -> Capture:
    """The capture ``request`` asks for; ``AttachFailed`` says why there is none."""
    from torchscope.agent.capture import AttachFailed

    if request.calls < 1 and request.steps < 1:
        raise AttachFailed("request", "ask for at least one call (calls) or step (steps)")
    try:
        import torch  # noqa: F401
    except ImportError as exc:
        raise AttachFailed("torch", f"torch cannot be imported in this job: {exc}") from None
    if request.steps > 0:
        from torchscope.agent.steps import StepsCapture

        return StepsCapture(request)
    from torchscope.agent.function import FunctionCapture

    return FunctionCapture(request)
