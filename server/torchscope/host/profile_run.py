"""Run one job end to end: target → worker job → trace → analysis → outcome.

The daemon and the CLI both go through ``Profiler.run_job``, so ``torchscope profile`` and the
editor's **Profile this function** give the same numbers. A job kind's host side is a
``HostJob``: the request it sends and how its reply becomes an outcome (``PROFILE`` here,
``COMPARE`` in ``compare_run``). Every trace a job exports is analysed in the analysis child
(``host/trace_analysis.py``), under the job's memory limit: a kind's ``outcome`` runs in a thread
and is handed ``analyse``, which waits for the child.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Callable, Generic, Optional, TypeVar

from torchscope.analysis import Measurements, Report, TraceError
from torchscope.host.trace_analysis import Analyse, TraceAnalyzer, analyse_here
from torchscope.host.trace_store import TraceStore
from torchscope.host.worker_process import (
    JobCancelled,
    MemoryLimitExceeded,
    WorkerError,
    WorkerProcess,
)
from torchscope.protocol import (
    Hello,
    Inputs,
    JobError,
    JobOptions,
    JobRequest,
    Message,
    Output,
    ProfileRequest,
    ProfileResult,
    Progress,
    call_expression_problem,
    json_as,
)
from torchscope.source.targets import Target, call_example

if TYPE_CHECKING:
    from torchscope.analysis import KernelLines

log = logging.getLogger(__name__)

ReplyT = TypeVar("ReplyT", bound=Message)
OutcomeT = TypeVar("OutcomeT")


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

    def where(self, file: str) -> str:
        """``file:line`` (or the file alone) for the one-line messages of the CLI and MCP."""
        return f"{file}:{self.line}" if self.line else file


def where(target: Target) -> dict[str, Any]:
    """The function as every ``--json`` object names it."""
    return {"file": target.file, "qualname": target.qualname, "line": target.def_line}


def header(target: Target, call: Optional[str] = None) -> dict[str, Any]:
    """What a ``--json`` object without a profile of its own starts with (``diff``; a sweep
    with no size profiled): the function and the call."""
    return {"target": where(target), "call": call}


def _beside_report(result: ProfileResult) -> dict[str, Any]:
    """What the ``--json`` object says of the worker's reply beside the report."""
    return {
        "inputs": result.inputs,
        "trace_path": result.trace_path,
        "dispatch_floor_us": result.measured.dispatch_floor_us,
        "torch_version": result.torch_version,
        "attribution_note": result.attribution_note,
    }


@dataclass
class ProfileOutcome:
    """Everything one profile produced; ``to_builtins`` of it is the ``profile --json``
    object: the target, the call, the report's fields and those of ``_beside_report``."""

    target: Target = field(metadata=json_as(view=where))
    call: Optional[str]
    result: ProfileResult = field(metadata=json_as(view=_beside_report, flatten=True))
    report: Report = field(metadata=json_as(flatten=True))
    output: list[str] = field(default_factory=list, metadata=json_as(skip=True))


def choose_call(target: Target, call: Optional[str], cuda_available: bool) -> Optional[str]:
    """The explicit call, else the first directive that applies here, else none if not needed."""
    return choose_inputs(target, call, cuda_available, None, captures=False)[0]


def choose_inputs(
    target: Target,
    call: Optional[str],
    cuda_available: bool,
    workspace_root: Optional[str],
    captures: bool = True,
) -> tuple[Optional[str], Inputs]:
    """The call and where its inputs come from (``JobRequest.inputs``): the explicit call,
    else the first directive that applies here, else a capture of a real call
    (``torchscope run --capture``), else none if the function needs no arguments."""
    if call and call.strip():
        return call.strip(), Inputs("call-expression")
    directive = target.directive_for(cuda_available)
    if directive is not None:
        return directive.call, Inputs("directive")
    if captures:
        from torchscope.host.captures import find_capture

        capture = find_capture(workspace_root, target.file, target.qualname)
        if capture is not None:
            return None, capture
    if target.needs_call:
        raise ProfileFailure(
            "call-missing",
            f"{target.qualname} needs arguments: add a comment "
            f"`# torchscope: {call_example(target)}` directly above the def, each … a real "
            "input such as torch.randn(64, 64) (or give the call expression with the job), "
            "or capture a real call with torchscope run --capture",
            line=target.def_line,
        )
    return None, Inputs("call-expression")


def with_fixes(report: Report, target: Target, result: ProfileResult) -> Report:
    """The report with ``fix`` on the findings a measured fix answers in ``target``'s source
    (``source/fixes/offers.py``); unchanged when the file cannot be read."""
    from torchscope.source.fixes.offers import attach_fixes

    try:
        source = Path(target.file).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return report
    return attach_fixes(report, source, target.qualname, result.measured.device_kind)


#: How long ``Profiler.warm`` waits for the worker's start-up work (the CPU profiler's warm-up).
WARM_TIMEOUT_S = 60.0


class HostJob(Generic[ReplyT, OutcomeT]):
    """The host side of one job kind: the request it sends and what its reply becomes.

    A module ``host/<kind>_run.py`` holding an instance is found by ``host.job_kinds``."""

    kind: str
    """The request's ``TYPE`` (``protocol.JOB_KINDS``)."""
    reply_type: type[ReplyT]
    #: The job needs a call expression (or a capture); ``run`` gets its calls from a program.
    chooses_call = True
    #: Close the worker after the job: the kind leaves the process changed for later jobs.
    fresh_worker_after = False
    #: Variables its worker needs over the service's (a launch configuration's ``env``).
    env: Mapping[str, str] = MappingProxyType({})

    def request(self, fields: dict[str, Any], target: Target, store: TraceStore) -> JobRequest:
        """The request to send; ``fields`` are ``job_fields``' (every request carries them)."""
        raise NotImplementedError

    def outcome(
        self,
        target: Target,
        call: Optional[str],
        reply: ReplyT,
        output: list[str],
        analyse: Analyse = analyse_here,
    ) -> OutcomeT:
        """The outcome of a successful reply (runs in a thread); its traces go to ``analyse``
        (the analysis child's, from ``Profiler.run_job``). A ``TraceError`` becomes an
        ``analysis`` failure."""
        raise NotImplementedError


def job_fields(
    job_id: int,
    target: Target,
    call: Optional[str],
    options: JobOptions,
    store: TraceStore,
    inputs: Optional[Inputs] = None,
) -> dict[str, Any]:
    """The fields every ``JobRequest`` carries, with a fresh trace path."""
    return {
        "inputs": inputs or Inputs(),
        "job_id": job_id,
        "file": str(Path(target.file).resolve()),
        "qualname": target.qualname,
        "call": call,
        "trace_path": str(store.new_path(target.file, target.qualname)),
        "options": options,
    }


class ProfileJobKind(HostJob[ProfileResult, ProfileOutcome]):
    kind = ProfileRequest.TYPE
    reply_type = ProfileResult

    def request(self, fields: dict[str, Any], target: Target, store: TraceStore) -> JobRequest:
        return ProfileRequest(**fields)

    def outcome(
        self,
        target: Target,
        call: Optional[str],
        reply: ProfileResult,
        output: list[str],
        analyse: Analyse = analyse_here,
    ) -> ProfileOutcome:
        report = analyse(reply.trace_path, reply.measured, False).report
        return ProfileOutcome(target, call, reply, with_fixes(report, target, reply), output)


PROFILE = ProfileJobKind()
"""The ``profile`` job kind: ``await profiler.run_job(PROFILE, target, call, options)``."""


def _expected(kind: HostJob[ReplyT, OutcomeT], reply: Message, job: str, line: int) -> ReplyT:
    """The worker's reply as ``kind`` expects it; a ``JobError`` or another message is a
    ``ProfileFailure``."""
    if isinstance(reply, JobError):
        raise ProfileFailure(reply.kind, reply.message, reply.line or line, reply.traceback)
    if not isinstance(reply, kind.reply_type):
        message = f"the worker answered {type(reply).__name__} to a {job} job"
        raise ProfileFailure("worker", message, line)
    return reply


class Profiler:
    """Owns one long-lived worker for one interpreter and runs jobs on it, one at a time;
    their traces go to ``analyzer`` (a server's, shared with its Open trace; else its own)."""

    def __init__(
        self,
        python: str,
        trace_store: TraceStore,
        cwd: Optional[str] = None,
        on_worker_stderr: Optional[Callable[[str], None]] = None,
        analyzer: Optional[TraceAnalyzer] = None,
        env: Optional[Mapping[str, str]] = None,
    ) -> None:
        self.python = python
        self.env = dict(env or {})
        """Variables the worker gets over the host's (``torchscope.env``, an env file)."""
        self._owns_analyzer = analyzer is None
        self.analyzer = analyzer or TraceAnalyzer()
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
            what = f"the job on `{self._running}`" if self._running else "the worker's start-up"
            on_progress(Progress(0, "queued", f"waiting for {what}", 0.0))

    async def hello(self) -> Hello:
        """Start the worker if needed and return its handshake (torch version, CUDA, devices)."""
        worker = await self._ensure_worker()
        assert worker.hello is not None
        return worker.hello

    @property
    def started_hello(self) -> Optional[Hello]:
        """The running worker's handshake, without starting one (None before it started)."""
        worker = self._worker
        return worker.hello if worker is not None and worker.alive else None

    async def warm(self, timeout_s: float = WARM_TIMEOUT_S) -> bool:
        """Start the worker and wait for its start-up work (``worker/main.py``); jobs wait."""
        async with self._lock:
            self._running = ""
            worker = await self._ensure_worker()
            return await worker.wait_warm(timeout_s)

    async def _ensure_worker(self, env: Optional[Mapping[str, str]] = None) -> WorkerProcess:
        """The worker; for a job (``env``: its own variables), one with them over the service's."""
        wanted = {**self.env, **(env or {})}
        async with self._start_lock:
            old = self._worker
            if env is not None and old is not None and old.alive and old.env != wanted:
                await old.close()  # under run_job's lock: no job is running on it
            if self._worker is None or not self._worker.alive:
                if self._worker is not None:  # died between jobs: end it the one way
                    await self._worker.kill()
                self.analyzer.prestart()  # ~0.3 s, while the worker imports torch
                worker = WorkerProcess(
                    self.python, cwd=self.cwd, on_stderr=self._on_worker_stderr, env=wanted
                )
                try:
                    await worker.start()
                except WorkerError as exc:
                    raise ProfileFailure("worker", str(exc)) from exc
                self._worker = worker
            return self._worker

    async def run_job(
        self,
        kind: HostJob[ReplyT, OutcomeT],
        target: Target,
        call: Optional[str],
        options: JobOptions,
        on_progress: Optional[Callable[[Progress], None]] = None,
        on_output: Optional[Callable[[Output], None]] = None,
    ) -> OutcomeT:
        """Run one job of ``kind`` on ``target``; every failure is a ``ProfileFailure``.
        Jobs run one at a time, in order."""
        bad = call_expression_problem(call) if call and kind.chooses_call else None
        why, problem = ("call-invalid", bad) if bad else ("trace-dir", self.trace_store.problem())
        if problem is not None:  # told before a worker starts (it takes seconds)
            raise ProfileFailure(why, problem, target.def_line)
        self._say_queued(on_progress)
        output: list[str] = []

        def collect_output(message: Output) -> None:
            output.append(message.text)
            if on_output:
                on_output(message)

        async with self._lock:
            self._running = target.qualname
            worker = await self._ensure_worker(kind.env)
            assert worker.hello is not None
            hello = worker.hello
            chosen, inputs = (
                choose_inputs(target, call, hello.cuda_available, options.workspace_root)
                if kind.chooses_call
                else (call, Inputs())
            )
            fields = job_fields(
                next(self._job_ids), target, chosen, options, self.trace_store, inputs
            )
            request = kind.request(fields, target, self.trace_store)
            try:
                reply = await worker.run(request, on_progress, collect_output, options.timeout_s)
            except JobCancelled as exc:
                raise ProfileFailure("timeout", str(exc), target.def_line) from exc
            except MemoryLimitExceeded as exc:
                raise ProfileFailure("memory", str(exc), target.def_line) from exc
            except WorkerError as exc:
                raise ProfileFailure("worker", str(exc), target.def_line) from exc
            finally:
                if kind.fresh_worker_after:
                    await worker.close()
        answer = _expected(kind, reply, request.TYPE, target.def_line)
        loop = asyncio.get_running_loop()
        analyse = self._analyse_in_child(options.max_memory, loop)
        try:
            return await loop.run_in_executor(
                None, kind.outcome, target, chosen, answer, output, analyse
            )
        except TraceError as exc:
            raise ProfileFailure("analysis", str(exc), target.def_line) from exc

    def _analyse_in_child(self, max_memory: str, loop: asyncio.AbstractEventLoop) -> Analyse:
        """``analyse`` for a kind's ``outcome`` (in a thread): the analysis child's, on
        ``loop``, under the job's ``max_memory``."""

        def analyse(
            path: str,
            measurements: Optional[Measurements],
            with_inventory: bool,
            kernels: Optional[KernelLines] = None,
        ) -> Any:
            running = self.analyzer.analyse(path, max_memory, measurements, with_inventory, kernels)
            return asyncio.run_coroutine_threadsafe(running, loop).result()

        return analyse

    async def close(self) -> None:
        if self._worker is not None:
            await self._worker.close()
            self._worker = None
        if self._owns_analyzer:
            await self.analyzer.close()
