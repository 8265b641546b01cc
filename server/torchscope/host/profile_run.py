"""Profile one function end to end: target → worker job → trace → analysis → report.

The daemon and the CLI both go through ``Profiler``, so ``torchscope profile`` and the editor's
**Profile this function** give the same numbers. The analysis runs here, in the host, on the
exported trace file (in a thread, so the daemon keeps serving while a large trace is read).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional

from torchscope.analysis import Measurements, Report, TraceError, analyze_trace
from torchscope.host.process_tree import default_max_memory
from torchscope.host.trace_store import TraceStore
from torchscope.host.worker_process import (
    JobCancelled,
    MemoryLimitExceeded,
    WorkerError,
    WorkerProcess,
)
from torchscope.protocol import Hello, JobError, Output, ProfileRequest, ProfileResult, Progress
from torchscope.targets import Target

log = logging.getLogger(__name__)

DEFAULT_STEPS = 5
DEFAULT_WARMUP = 3
DEFAULT_TIMEOUT_S = 120.0


@dataclass
class ProfileOptions:
    steps: int = DEFAULT_STEPS
    warmup: int = DEFAULT_WARMUP
    timeout_s: float = DEFAULT_TIMEOUT_S
    device: str = "auto"
    workspace_root: Optional[str] = None
    with_stack: bool = False
    max_memory: Optional[int] = field(default_factory=default_max_memory)
    """Bytes the worker's processes may hold together before it is stopped (None: no limit)."""


class ProfileFailure(Exception):
    """A profile that could not be completed; ``kind`` as in ``JobError``, plus the user line."""

    def __init__(
        self, kind: str, message: str, line: Optional[int] = None, traceback: str = ""
    ) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.line = line
        self.traceback = traceback


@dataclass
class ProfileOutcome:
    """Everything one profile produced; ``to_json`` is the ``profile --json`` object."""

    target: Target
    call: Optional[str]
    result: ProfileResult
    report: Report
    output: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "target": {
                "file": self.target.file,
                "qualname": self.target.qualname,
                "line": self.target.def_line,
            },
            "call": self.call,
        }
        data.update(self.report.to_dict())
        data["trace_path"] = self.result.trace_path
        data["dispatch_floor_us"] = self.result.dispatch_floor_us
        data["torch_version"] = self.result.torch_version
        data["attribution_note"] = self.result.attribution_note
        return data


def choose_call(target: Target, call: Optional[str], cuda_available: bool) -> Optional[str]:
    """The explicit call, else the first directive that applies here, else none if not needed."""
    if call and call.strip():
        return call.strip()
    directive = target.directive_for(cuda_available)
    if directive is not None:
        return directive.call
    if target.needs_call:
        example = (
            f"{target.name}("
            + ", ".join(p.name + "=…" for p in target.params if not p.has_default)
            + ")"
        )
        raise ProfileFailure(
            "call-missing",
            f"{target.qualname} needs arguments: add a comment `# torchscope: {example}` "
            "directly above the def (or pass --call / answer the prompt) with real inputs, "
            "e.g. torch.randn(64, 64)",
            line=target.def_line,
        )
    return None


def measurements_of(result: ProfileResult) -> Measurements:
    """The worker's unprofiled numbers, as the analysis takes them."""
    return Measurements(
        cold_us=result.cold_us,
        call_us=list(result.call_us),
        dispatch_floor_us=result.dispatch_floor_us,
        device_kind=result.device_kind,
        device_name=result.device_name,
        calls=result.timed_calls,
    )


class Profiler:
    """Owns one long-lived worker for one interpreter and runs jobs on it, one at a time."""

    def __init__(
        self,
        python: str,
        trace_store: TraceStore,
        cwd: Optional[str] = None,
        on_worker_stderr: Optional[Callable[[str], None]] = None,
    ) -> None:
        self.python = python
        self.trace_store = trace_store
        self.cwd = cwd
        self._on_worker_stderr = on_worker_stderr
        self._worker: Optional[WorkerProcess] = None
        self._lock = asyncio.Lock()
        # One start at a time: a background prestart and the first job must share one worker.
        self._start_lock = asyncio.Lock()
        self._job_ids = itertools.count(1)
        self._running = "another job"  # what a queued request waits for

    def _say_queued(self, on_progress: Optional[Callable[[Progress], None]]) -> None:
        """Requests run one at a time, in order; one that has to wait says for what."""
        if self._lock.locked() and on_progress is not None:
            on_progress(Progress(0, "queued", f"waiting for the job on `{self._running}`", 0.0))

    async def hello(self) -> Hello:
        """Start the worker if needed and return its handshake (torch version, CUDA, devices)."""
        worker = await self._ensure_worker()
        assert worker.hello is not None
        return worker.hello

    async def _ensure_worker(self) -> WorkerProcess:
        async with self._start_lock:
            if self._worker is None or not self._worker.alive:
                worker = WorkerProcess(self.python, cwd=self.cwd, on_stderr=self._on_worker_stderr)
                try:
                    await worker.start()
                except WorkerError as exc:
                    raise ProfileFailure("worker", str(exc)) from exc
                self._worker = worker
            return self._worker

    async def profile(
        self,
        target: Target,
        call: Optional[str],
        options: ProfileOptions,
        on_progress: Optional[Callable[[Progress], None]] = None,
        on_output: Optional[Callable[[Output], None]] = None,
    ) -> ProfileOutcome:
        self._say_queued(on_progress)
        async with self._lock:
            self._running = target.qualname
            hello = await self.hello()
            chosen = choose_call(target, call, hello.cuda_available)
            request = ProfileRequest(
                job_id=next(self._job_ids),
                file=str(Path(target.file).resolve()),
                qualname=target.qualname,
                call=chosen,
                trace_path=str(self.trace_store.new_path(target.file, target.qualname)),
                workspace_root=options.workspace_root,
                steps=options.steps,
                warmup=options.warmup,
                device=options.device,
                with_stack=options.with_stack,
            )
            output: list[str] = []

            def collect_output(message: Output) -> None:
                output.append(message.text)
                if on_output:
                    on_output(message)

            worker = await self._ensure_worker()
            worker.max_memory = options.max_memory
            try:
                reply = await worker.run(request, on_progress, collect_output, options.timeout_s)
            except JobCancelled as exc:
                raise ProfileFailure("timeout", str(exc), target.def_line) from exc
            except MemoryLimitExceeded as exc:
                raise ProfileFailure("memory", str(exc), target.def_line) from exc
            except WorkerError as exc:
                raise ProfileFailure("worker", str(exc), target.def_line) from exc
        if isinstance(reply, JobError):
            raise ProfileFailure(
                reply.kind, reply.message, reply.line or target.def_line, reply.traceback
            )
        measurements = measurements_of(reply)
        loop = asyncio.get_running_loop()
        try:
            report = await loop.run_in_executor(None, analyze_trace, reply.trace_path, measurements)
        except TraceError as exc:
            raise ProfileFailure("analysis", str(exc), target.def_line) from exc
        return ProfileOutcome(target, chosen, reply, report, output)

    @contextlib.asynccontextmanager
    async def exclusive(self) -> AsyncIterator[tuple[WorkerProcess, Hello, int]]:
        """The worker, its handshake and a fresh job id, held for one job of another kind
        (``host.compare_run``); other jobs wait meanwhile."""
        async with self._lock:
            hello = await self.hello()
            yield await self._ensure_worker(), hello, next(self._job_ids)

    async def close(self) -> None:
        if self._worker is not None:
            await self._worker.close()
            self._worker = None
