"""The host side of ``torchscope attach``: find the jobs whose agent listens
(``torchscope jobs``), ask one to profile its next calls of a function (or its next optimizer
steps), and analyse the trace it wrote in the analysis child, as every trace is. The outcome is
a ``profile`` outcome with ``source: "attached"``, the ``pid`` and the ``attached`` object (the
job, and the calls timed and profiled with their modes).

Cancelling the awaiting task (Ctrl-C, the editor's cancel, MCP's) sends ``CancelAttach``: the
agent restores the function at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shlex
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional

from torchscope.agent.paths import socket_dir, socket_path, socket_pid
from torchscope.host.profile_run import ProfileFailure, ProfileOutcome, with_fixes
from torchscope.host.trace_analysis import TraceAnalyzer
from torchscope.host.trace_store import TraceStore
from torchscope.protocol import (
    AgentHello,
    AgentInfo,
    AttachRequest,
    AttachResult,
    CallSeen,
    CancelAttach,
    FrameDecoder,
    JobError,
    Message,
    Progress,
    ProtocolError,
    encode,
    json_as,
)
from torchscope.source.targets import Target

#: How long ``jobs`` waits for one agent's hello.
HELLO_TIMEOUT_S = 3.0
NO_AGENT = (
    "no torchscope agent listens in process {pid} — start the job with `python -m "
    "torchscope.agent train.py ARGS…`, or with TORCHSCOPE_AGENT=1 in its environment, or call "
    "torchscope.agent.listen() in it; from CPython 3.14 torchscope loads it into a job started "
    "without it (sys.remote_exec) (docs/attach.md)"
)


@dataclass(frozen=True)
class AttachInfo:
    """The ``attached`` object: the job and what it did with the target."""

    pid: int
    command: str
    rank: Optional[int]
    calls: list[CallSeen]
    """The job's calls timed unprofiled (``measured.call_us``)."""
    profiled: list[CallSeen]
    """The job's calls profiled (the trace's steps)."""
    mode_note: str


@dataclass(frozen=True)
class AttachPart:
    """``torchscope attach --json``'s object: the profile's, plus ``source``, ``pid`` and
    ``attached``."""

    profile: ProfileOutcome = field(metadata=json_as(flatten=True))
    pid: int
    attached: AttachInfo
    source: str = "attached"


def job_age(info: AgentInfo) -> float:
    return max(0.0, time.time() - info.started)


def job_command(info: AgentInfo) -> str:
    return shlex.join(info.argv)


async def _exchange(
    pid: int,
    request: Message,
    on_progress: Optional[Callable[[Progress], None]] = None,
    folder: Optional[str] = None,
) -> Message:
    """Send ``request`` to ``pid``'s agent and return its reply (progress passed on)."""
    path = socket_path(pid, folder)
    if not path.exists() and _alive(pid):
        from torchscope.host.agent_load import can_load, load_agent

        if can_load():  # CPython >= 3.14: load it (the script runs at the job's next safe point)
            await asyncio.get_running_loop().run_in_executor(None, load_agent, pid, path)
    try:
        reader, writer = await asyncio.open_unix_connection(str(path))
    except (FileNotFoundError, ConnectionRefusedError):
        raise ProfileFailure("no-agent", NO_AGENT.format(pid=pid)) from None
    except PermissionError as exc:
        raise ProfileFailure("refused", f"the agent of process {pid} refused: {exc}") from None
    decoder = FrameDecoder()
    try:
        writer.write(encode(request))
        await writer.drain()
        while True:
            chunk = await reader.read(1 << 16)
            if not chunk:
                raise ProfileFailure(
                    "job-exited",
                    f"process {pid} closed the connection (the job exited?); nothing was profiled",
                )
            for message in decoder.feed(chunk):
                if isinstance(message, Progress):
                    if on_progress is not None:
                        on_progress(message)
                    continue
                return message
    except asyncio.CancelledError:
        await _cancel(reader, writer)
        raise
    except ProtocolError as exc:
        raise ProfileFailure("protocol", f"process {pid}'s agent: {exc}") from None
    finally:
        writer.close()


#: How long a cancel waits for the agent to say the function is restored.
CANCEL_WAIT_S = 3.0


async def _cancel(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Send ``CancelAttach`` and wait (briefly) for the agent's answer: once it came, the
    function is back in place."""

    async def answered() -> None:
        writer.write(encode(CancelAttach()))
        await writer.drain()
        decoder = FrameDecoder()
        while chunk := await reader.read(1 << 16):
            if any(not isinstance(m, Progress) for m in decoder.feed(chunk)):
                return

    with contextlib.suppress(OSError, ProtocolError, asyncio.TimeoutError):
        await asyncio.wait_for(answered(), CANCEL_WAIT_S)


def _reply(message: Message, kind: type[AttachResult]) -> AttachResult:
    if isinstance(message, JobError):
        raise ProfileFailure(message.kind, message.message, message.line, message.traceback)
    if not isinstance(message, kind):
        raise ProfileFailure("protocol", f"unexpected {type(message).__name__} from the agent")
    return message


async def hello(pid: int, folder: Optional[str] = None) -> AgentInfo:
    """What ``pid``'s agent says of its job; ``ProfileFailure`` when none answers."""
    reply = await asyncio.wait_for(_exchange(pid, AgentHello(), folder=folder), HELLO_TIMEOUT_S)
    if isinstance(reply, JobError):
        raise ProfileFailure(reply.kind, reply.message)
    if not isinstance(reply, AgentInfo):
        raise ProfileFailure("protocol", f"unexpected {type(reply).__name__} from the agent")
    return reply


async def list_jobs(folder: Optional[str] = None) -> list[AgentInfo]:
    """This user's jobs with an agent on this host; sockets of dead processes are removed."""
    found = []
    for path in sorted(socket_dir(folder).iterdir()):
        pid = socket_pid(path)
        if pid is None:
            continue
        if not _alive(pid):
            path.unlink(missing_ok=True)
            continue
        try:
            found.append(await hello(pid, folder))
        except (ProfileFailure, asyncio.TimeoutError, OSError):
            continue
    return found


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


async def attach(
    pid: int,
    target: Target,
    calls: int,
    store: TraceStore,
    analyzer: TraceAnalyzer,
    timeout_s: float = 300.0,
    on_progress: Optional[Callable[[Progress], None]] = None,
    folder: Optional[str] = None,
) -> AttachPart:
    """Profile ``pid``'s next ``calls`` calls of ``target`` (after ``calls`` timed ones);
    ``ProfileFailure`` says why not."""
    from torchscope.analysis import TraceError
    from torchscope.host.call_modes import mode_label

    info = await hello(pid, folder)
    trace = str(store.new_path(target.file, target.qualname))
    request = AttachRequest(
        0, trace, str(Path(target.file).resolve()), target.qualname, calls, 0, timeout_s
    )
    result = _reply(await _exchange(pid, request, on_progress, folder), AttachResult)
    profile = result.profile
    try:
        analysed = await analyzer.analyse(profile.trace_path, measurements=profile.measured)
    except TraceError as exc:
        raise ProfileFailure("analysis", str(exc), target.def_line) from None
    report = with_fixes(analysed.report, target, profile)
    outcome = ProfileOutcome(target, None, profile, report)
    note = f"profiled {mode_label(result.profiled)}"
    about = AttachInfo(pid, job_command(info), info.rank, result.calls, result.profiled, note)
    return AttachPart(outcome, pid, about)


async def attach_steps(
    pid: int,
    steps: int,
    store: TraceStore,
    timeout_s: float = 300.0,
    on_progress: Optional[Callable[[Progress], None]] = None,
    folder: Optional[str] = None,
) -> AttachResult:
    """Profile ``pid``'s next ``steps`` optimizer steps (after ``steps`` timed ones): the
    agent's result, its trace ready for ``analyze``."""
    trace = str(store.new_path(f"pid{pid}", "steps"))
    request = AttachRequest(0, trace, "", "", steps, steps, timeout_s)
    return _reply(await _exchange(pid, request, on_progress, folder), AttachResult)


async def rank_jobs(pid: int, folder: Optional[str] = None) -> list[AgentInfo]:
    """Every rank of the torchrun job ``pid`` belongs to (the agents that share its parent,
    the elastic agent), by rank; ``ProfileFailure`` when ``pid`` is not a rank."""
    mine = await hello(pid, folder)
    if mine.rank is None:
        raise ProfileFailure("not-ranks", f"process {pid} is not a rank of a torchrun job")
    ranks = [j for j in await list_jobs(folder) if j.ppid == mine.ppid and j.rank is not None]
    return sorted(ranks, key=lambda j: j.rank or 0)


async def attach_ranks(
    pid: int,
    target: Target,
    calls: int,
    store: TraceStore,
    timeout_s: float = 300.0,
    on_progress: Optional[Callable[[Progress], None]] = None,
    folder: Optional[str] = None,
) -> tuple[list[AgentInfo], list[AttachResult]]:
    """The same target's next calls on every rank at once (``rank_jobs``): each rank's
    result, in rank order, its trace ready for the cross-rank analysis."""
    ranks = await rank_jobs(pid, folder)
    file = str(Path(target.file).resolve())

    async def one(info: AgentInfo) -> AttachResult:
        trace = str(store.new_path(target.file, f"{target.qualname}.rank{info.rank}"))
        request = AttachRequest(0, trace, file, target.qualname, calls, 0, timeout_s)
        reply = await _exchange(info.pid, request, on_progress, folder)
        return _reply(reply, AttachResult)

    return ranks, list(await asyncio.gather(*(one(info) for info in ranks)))
