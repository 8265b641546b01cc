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
import subprocess
import sys
from collections import deque
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Optional

from torchscope.chatter import is_profiler_chatter, log_chatter
from torchscope.host import process_tree
from torchscope.host.worker_env import (
    dependency_path,
    release_guardian,
    start_guardian,
    worker_environment,
)
from torchscope.protocol import (
    PROTOCOL_VERSION,
    FrameDecoder,
    Hello,
    JobRequest,
    Message,
    Output,
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

#: Forward at most this much of the worker's stderr per job; the rest is counted.
MAX_STDERR_BYTES = 256 * 1024
#: Lines of stderr quoted when the worker dies.
TAIL_LINES = 12


class WorkerError(Exception):
    """The worker could not be started or died; the message says what to do."""


class JobCancelled(Exception):
    """The job was cancelled (by the user or a timeout) and its worker killed."""


class MemoryLimitExceeded(WorkerError):
    """The worker's processes together went over the memory limit and were stopped."""


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
        env: Optional[Mapping[str, str]] = None,
    ) -> None:
        self.python = python
        self.env = dict(env or {})
        """Variables set for the worker over the host's (``torchscope.env``, an env file)."""
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
        self.warm = False
        """The worker said its one-time start-up work is done (``protocol.WARM_STAGE``)."""
        self.marker = process_tree.new_marker()
        """``TORCHSCOPE_JOB`` of this worker and everything it starts."""
        self.max_memory: Optional[int] = None
        """Bytes the worker's processes may hold together; set by each job's options."""
        self._stopped: Optional[str] = None  # why the host stopped the worker, if it did
        self._tail: deque[str] = deque(maxlen=4 * TAIL_LINES)
        self._stderr_room = MAX_STDERR_BYTES
        self._stderr_dropped = 0
        self._guardian: Optional[subprocess.Popen[bytes]] = None
        self._guardian_pipe: Optional[int] = None
        self._watch_task: Optional[asyncio.Task[None]] = None

    @property
    def alive(self) -> bool:
        return self._process is not None and self._process.returncode is None

    async def start(self) -> Hello:
        process_tree.become_subreaper()  # escaped descendants come back to us, to be killed
        env = worker_environment(self.marker, self.env)
        dependencies = dependency_path()
        try:
            self._guardian, self._guardian_pipe = start_guardian(PACKAGE_PARENT, self.marker)
            self._process = await asyncio.create_subprocess_exec(
                self.python,
                "-c",
                _BOOTSTRAP,
                PACKAGE_PARENT,
                *self.extra_paths,
                *([dependencies] if dependencies else []),
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                cwd=self.cwd,
                env=env,
                start_new_session=True,
                limit=1024 * 1024,
            )
        except OSError as exc:
            await self._stop_guardian()
            raise WorkerError(
                f"cannot start the Python interpreter {self.python!r}: {exc} — "
                "set the interpreter (torchscope.pythonPath / --python) to a Python with torch"
            ) from exc
        process_tree.own(self._process)
        self._stderr_task = asyncio.ensure_future(self._pump_stderr())
        self._watch_task = asyncio.ensure_future(self._watch_memory())
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
            text = line.decode("utf-8", "replace").rstrip("\n")
            self._tail.append(text[:500])
            if is_profiler_chatter(text):  # the job's log only (``--verbose``), on every face
                log_chatter(text)
                continue
            if self._stderr_room <= 0:
                self._stderr_dropped += len(line)
                continue
            if len(line) > self._stderr_room:
                self._stderr_dropped += len(line) - self._stderr_room
                text = line[: self._stderr_room].decode("utf-8", "replace").rstrip("\n")
            self._stderr_room -= len(line)
            self._on_stderr(text)

    def _start_job_output(self) -> None:
        """A new job: its own stderr allowance."""
        self._stderr_room = MAX_STDERR_BYTES
        self._stderr_dropped = 0

    def _end_job_output(self) -> None:
        if self._stderr_dropped:
            size = process_tree.format_size(self._stderr_dropped)
            self._on_stderr(f"[torchscope] … {size} more output not shown")
        self._stderr_dropped = 0

    async def _watch_memory(self) -> None:
        """Stop the worker when its process tree's RSS goes over ``max_memory``."""
        process = self._process
        assert process is not None
        over = await process_tree.watch_memory(process.pid, self.marker, lambda: self.max_memory)
        if over is not None and process.returncode is None:
            self._stopped = process_tree.memory_stop_message(
                over, "the function's", "a smaller input"
            )
            process_tree.kill_marked_now(self.marker, keep={process.pid})
            with contextlib.suppress(ProcessLookupError):
                process.kill()

    async def _next_message(self) -> Message:
        assert self._process is not None and self._process.stdout is not None
        while not self._pending:
            chunk = await self._read_or_exit()
            if not chunk:
                raise await self._death()
            try:
                self._pending.extend(self._decoder.feed(chunk))
            except ProtocolError as exc:
                await self.kill()
                raise WorkerError(f"the worker's pipe is corrupt: {exc}") from exc
        return self._pending.pop(0)

    async def _read_or_exit(self) -> bytes:
        """The next chunk from the worker, or b"" once it has exited. Waits on the process, not
        on EOF: a child the user's code left behind may hold the pipes open."""
        process = self._process
        assert process is not None and process.stdout is not None
        read = asyncio.ensure_future(process.stdout.read(65536))
        exited = asyncio.ensure_future(process_tree.wait_exited(process))
        try:
            await asyncio.wait({read, exited}, return_when=asyncio.FIRST_COMPLETED)
            if not read.done():  # gone: take what it wrote before dying, if it comes at once
                await asyncio.wait({read}, timeout=0.2)
            return read.result() if read.done() else b""
        finally:
            for task in (read, exited):
                task.cancel()

    async def _death(self) -> WorkerError:
        """The error for a worker that died: the signal or exit code, named, and its last
        words on stderr."""
        process = self._process
        assert process is not None
        await process_tree.wait_exited(process, 2.0)
        await self.kill()  # the one end: its children (they may hold stderr), the guardian
        if self._stopped:
            return MemoryLimitExceeded(self._stopped)
        tail = [line for line in self._tail if process_tree.worth_quoting(line)][-TAIL_LINES:]
        said = "; its last output:\n" + "\n".join(tail) if tail else " (it wrote nothing to stderr)"
        return WorkerError(
            f"{process_tree.describe_exit(process.returncode)}{said}\n"
            "The next profile starts a fresh worker."
        )

    def _send(self, message: Message) -> None:
        assert self._process is not None and self._process.stdin is not None
        self._process.stdin.write(encode(message))

    async def run(
        self,
        request: JobRequest,
        on_progress: Optional[ProgressCallback] = None,
        on_output: Optional[OutputCallback] = None,
        timeout_s: Optional[float] = None,
    ) -> Message:
        """Run one job of any kind and return its reply (its result, or a ``JobError``); on
        timeout or cancellation the worker is killed and the error raised."""
        if not self.alive:
            raise WorkerError("the worker is not running")
        self.max_memory = process_tree.max_memory_bytes(request.options.max_memory)
        self._start_job_output()
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
        finally:
            await self._end_job()

    async def _end_job(self) -> None:
        """Whatever the outcome: nothing the job started outlives it."""
        keep = {self._process.pid} if self._process is not None else set()
        await process_tree.kill_marked(self.marker, keep=keep)
        self._end_job_output()

    async def _collect(
        self,
        job_id: int,
        on_progress: Optional[ProgressCallback],
        on_output: Optional[OutputCallback],
    ) -> Message:
        while True:
            message = await self._next_message()
            if isinstance(message, Progress) and message.job_id == 0:
                self.warm = True  # the start-up's "warm" message, read inside the first job
            elif isinstance(message, Progress):
                if on_progress:
                    on_progress(message)
            elif isinstance(message, Output):
                if on_output:
                    on_output(message)
            elif getattr(message, "job_id", None) == job_id:
                return message

    async def wait_warm(self, timeout_s: float) -> bool:
        """Until the worker says its start-up work is done (the CPU profiler's warm-up);
        only between jobs. False when it did not within ``timeout_s``."""
        try:
            while not self.warm:
                message = await asyncio.wait_for(self._next_message(), timeout_s)
                self.warm = isinstance(message, Progress) and message.job_id == 0
        except asyncio.TimeoutError:
            return False
        return True

    async def kill(self) -> None:
        """The one way a worker ends, whatever ended it (a crash, ``os._exit``, a timeout, a
        cancel, the memory limit, ``close``): kill its whole process group and everything
        carrying its marker, reap it, drain its stderr, stop the memory watch, and close the
        guardian's pipe and reap the guardian. Idempotent."""
        process = self._process
        if process is not None:
            if process.returncode is None:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(process.pid, signal.SIGKILL)
                with contextlib.suppress(ProcessLookupError):
                    process.kill()
            process_tree.kill_marked_now(self.marker, keep={process.pid})
            await process_tree.wait_exited(process, 10.0)
            await process_tree.kill_marked(self.marker, keep={process.pid})
            await self._finish_stderr()
        if self._watch_task is not None:
            self._watch_task.cancel()
            self._watch_task = None
        await self._stop_guardian()
        self._process = None

    async def _stop_guardian(self) -> None:
        """Close the guardian's pipe (it sweeps once more and exits) and reap it."""
        guardian, self._guardian = self._guardian, None
        pipe, self._guardian_pipe = self._guardian_pipe, None
        if guardian is not None and pipe is not None:
            await release_guardian(guardian, pipe)
        elif pipe is not None:
            os.close(pipe)

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
            await process_tree.wait_exited(process, 5.0)
        await self.kill()
