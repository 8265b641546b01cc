"""The host's handle on one worker subprocess (used by both the daemon and the CLI).

The worker is long-lived, so ``import torch`` and CUDA context creation are paid once per
interpreter. It runs in its own process group: a timeout, a cancel or a crash kills the whole
group (the user's code may have started children), and the next job starts a fresh worker.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Optional, Union

from torchscope.protocol import (
    PROTOCOL_VERSION,
    CompareRequest,
    CompareResult,
    DiffResult,
    FrameDecoder,
    Hello,
    JobError,
    Message,
    Output,
    ProfileRequest,
    ProfileResult,
    Progress,
    ProtocolError,
    Shutdown,
    encode,
)

log = logging.getLogger(__name__)

#: The folder holding the ``torchscope`` package, put first on the worker's ``sys.path`` so the
#: worker code matches the daemon's even when the user's interpreter has another copy installed.
PACKAGE_PARENT = str(Path(__file__).resolve().parents[2])

#: Appended (last) to the worker's path: bundled pure-Python dependencies such as msgpack.
EXTRA_PATHS_ENV = "TORCHSCOPE_WORKER_EXTRA_PATHS"

_BOOTSTRAP = (
    "import sys; sys.path.insert(0, sys.argv[1]); "
    "sys.path.extend(p for p in sys.argv[2:] if p); "
    "from torchscope.worker.main import main; main()"
)

#: How long a fresh worker may take to import torch and say hello.
START_TIMEOUT_S = 120.0


class WorkerError(Exception):
    """The worker could not be started or died; the message says what to do."""


class JobCancelled(Exception):
    """The job was cancelled (by the user or a timeout) and its worker killed."""


ProgressCallback = Callable[[Progress], None]
OutputCallback = Callable[[Output], None]


class WorkerProcess:
    """Start, talk to, and kill one worker running in ``python``."""

    def __init__(
        self,
        python: str = sys.executable,
        cwd: Optional[str] = None,
        on_stderr: Optional[Callable[[str], None]] = None,
        extra_paths: Optional[list[str]] = None,
    ) -> None:
        self.python = python
        if extra_paths is None:
            extra_paths = os.environ.get(EXTRA_PATHS_ENV, "").split(os.pathsep)
        self.extra_paths = [p for p in extra_paths if p]
        self.cwd = cwd
        self._on_stderr = on_stderr or (lambda line: log.info("worker: %s", line))
        self._process: Optional[asyncio.subprocess.Process] = None
        self._decoder = FrameDecoder()
        self._pending: list[Message] = []
        self._stderr_task: Optional[asyncio.Task[None]] = None
        self.hello: Optional[Hello] = None

    @property
    def alive(self) -> bool:
        return self._process is not None and self._process.returncode is None

    async def start(self) -> Hello:
        env = dict(os.environ)
        env.setdefault("PYTHONUNBUFFERED", "1")
        try:
            self._process = await asyncio.create_subprocess_exec(
                self.python,
                "-c",
                _BOOTSTRAP,
                PACKAGE_PARENT,
                *self.extra_paths,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                cwd=self.cwd,
                env=env,
                start_new_session=True,
                limit=1024 * 1024,
            )
        except OSError as exc:
            raise WorkerError(
                f"cannot start the Python interpreter {self.python!r}: {exc} — "
                "set the interpreter (torchscope.pythonPath / --python) to a Python with torch"
            ) from exc
        self._stderr_task = asyncio.ensure_future(self._pump_stderr())
        try:
            message = await asyncio.wait_for(self._next_message(), START_TIMEOUT_S)
        except asyncio.TimeoutError:
            await self.kill()
            raise WorkerError(
                f"the worker in {self.python} did not start within {START_TIMEOUT_S:.0f} s"
            ) from None
        if not isinstance(message, Hello):
            await self.kill()
            raise WorkerError(
                f"the worker in {self.python} sent {type(message).__name__} instead of hello"
            )
        if message.protocol_version != PROTOCOL_VERSION:
            await self.kill()
            raise WorkerError(
                f"worker speaks protocol {message.protocol_version}, daemon {PROTOCOL_VERSION}: "
                "restart the server after updating torchscope"
            )
        if message.error:
            await self.kill()
            raise WorkerError(message.error)
        self.hello = message
        return message

    async def _pump_stderr(self) -> None:
        assert self._process is not None and self._process.stderr is not None
        stream = self._process.stderr
        while True:
            try:
                line = await stream.readline()
            except (ValueError, asyncio.LimitOverrunError):
                line = await stream.read(65536)
            if not line:
                return
            self._on_stderr(line.decode("utf-8", "replace").rstrip("\n"))

    async def _next_message(self) -> Message:
        assert self._process is not None and self._process.stdout is not None
        while not self._pending:
            chunk = await self._process.stdout.read(65536)
            if not chunk:
                code = await self._process.wait()
                raise WorkerError(f"the worker exited unexpectedly (exit code {code}); see the log")
            try:
                self._pending.extend(self._decoder.feed(chunk))
            except ProtocolError as exc:
                await self.kill()
                raise WorkerError(f"the worker's pipe is corrupt: {exc}") from exc
        return self._pending.pop(0)

    def _send(self, message: Message) -> None:
        assert self._process is not None and self._process.stdin is not None
        self._process.stdin.write(encode(message))

    async def run(
        self,
        request: ProfileRequest,
        on_progress: Optional[ProgressCallback] = None,
        on_output: Optional[OutputCallback] = None,
        timeout_s: Optional[float] = None,
    ) -> Union[ProfileResult, JobError]:
        """Run one job; on timeout or cancellation the worker is killed and the error raised."""
        reply = await self._run(request, on_progress, on_output, timeout_s)
        assert isinstance(reply, (ProfileResult, JobError))
        return reply

    async def run_compare(
        self,
        request: CompareRequest,
        on_progress: Optional[ProgressCallback] = None,
        on_output: Optional[OutputCallback] = None,
        timeout_s: Optional[float] = None,
    ) -> Union[CompareResult, JobError]:
        """Run one eager-vs-compiled job, like :meth:`run`."""
        reply = await self._run(request, on_progress, on_output, timeout_s)
        assert isinstance(reply, (CompareResult, JobError))
        return reply

    async def _run(
        self,
        request: ProfileRequest,
        on_progress: Optional[ProgressCallback],
        on_output: Optional[OutputCallback],
        timeout_s: Optional[float],
    ) -> Message:
        if not self.alive:
            raise WorkerError("the worker is not running")
        self._send(request)
        try:
            return await asyncio.wait_for(
                self._collect(request.job_id, on_progress, on_output), timeout_s
            )
        except asyncio.TimeoutError:
            await self.kill()
            raise JobCancelled(
                f"the job did not finish within {timeout_s:.0f} s and was stopped — raise the "
                "timeout (torchscope.timeout / --timeout) or profile a smaller input"
            ) from None
        except asyncio.CancelledError:
            await self.kill()
            raise

    async def _collect(
        self,
        job_id: int,
        on_progress: Optional[ProgressCallback],
        on_output: Optional[OutputCallback],
    ) -> Union[ProfileResult, CompareResult, DiffResult, JobError]:
        while True:
            message = await self._next_message()
            if isinstance(message, Progress) and on_progress:
                on_progress(message)
            elif isinstance(message, Output) and on_output:
                on_output(message)
            elif (
                isinstance(message, (ProfileResult, CompareResult, DiffResult, JobError))
                and message.job_id == job_id
            ):
                return message

    async def kill(self) -> None:
        """Kill the worker's whole process group and reap it."""
        process = self._process
        if process is None:
            return
        if process.returncode is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(process.pid, signal.SIGKILL)
            with contextlib.suppress(ProcessLookupError):
                process.kill()
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(process.wait(), 10)
        await self._finish_stderr()
        self._process = None

    async def _finish_stderr(self) -> None:
        if self._stderr_task is not None:
            with contextlib.suppress(asyncio.TimeoutError, asyncio.CancelledError):
                await asyncio.wait_for(self._stderr_task, 2)
            self._stderr_task = None

    async def close(self) -> None:
        """Ask the worker to exit; kill it if it does not within a few seconds."""
        process = self._process
        if process is None:
            return
        if process.returncode is None:
            with contextlib.suppress(Exception):
                self._send(Shutdown())
                assert process.stdin is not None
                process.stdin.close()
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(process.wait(), 5)
        await self.kill()

