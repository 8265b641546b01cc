"""``torchscope.profile(fn, *args, **kwargs)``: the worker's passes in this process.

The passes are ``worker/job.py``'s (cold call, warmup, timing without the profiler, profiled
steps with line markers; ``notebook/job.py`` only hands them a prepared call), the analysis is
the host's (``PROFILE.outcome``: ``analyze_trace`` over the exported trace with
the result's ``measured``), so the report is the one ``torchscope profile --json`` prints.
``compare_call`` (``--compare-compile``) is the CLI's kind the same way, and ``sweep_calls``
(``--sweep``) is the host's sweep loop with its jobs run here (``InProcessExecutor``). A
failure raises ``ProfileError`` chained to the user's exception.
"""

from __future__ import annotations

import sys
from collections.abc import Coroutine, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Optional, TypeVar, Union

from torchscope.notebook.cells import target_of
from torchscope.notebook.job import (
    InProcessCompareJob,
    InProcessProfileJob,
    call_target,
    compare_request,
    cuda_available,
    profile_request,
    profiler_running,
)
from torchscope.notebook.result import Extra, ProfileReport
from torchscope.notebook.stderr_filter import chatter_filtered
from torchscope.protocol import PROTOCOL_VERSION, Hello, JobOptions, Output, Progress, to_builtins
from torchscope.source.targets import Target
from torchscope.worker.call_expression import CallExpressionError, PreparedCall, prepare_call
from torchscope.worker.job import JobFailed

if TYPE_CHECKING:
    from torchscope.host.profile_run import HostJob, ProfileOutcome

Options = Union[JobOptions, Mapping[str, Any], None]
T = TypeVar("T")


class ProfileError(Exception):
    """A profile that could not be completed: ``kind`` as in the worker's ``JobError``,
    ``traceback`` the user's frames only."""

    def __init__(self, kind: str, message: str, traceback: str = "") -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.traceback = traceback


def job_options(options: Options) -> JobOptions:
    """``JobOptions`` from options or a mapping of its field names (``{"steps": 10}``)."""
    if isinstance(options, JobOptions):
        return options
    try:
        return JobOptions(workspace_root=str(Path.cwd())).updated(options or {})
    except ValueError as exc:
        raise ProfileError("settings", str(exc)) from None


def _store() -> Any:
    from torchscope.host.trace_store import TraceStore

    return TraceStore()


def _ignore(_: Any) -> None:
    return None


def _failed(failed: JobFailed) -> ProfileError:
    error = failed.error
    return ProfileError(error.kind, error.message, error.traceback)


def _guarded(run: Callable[[], Any]) -> Any:
    """Run the passes; a job failure becomes a ``ProfileError`` (chained to the user's
    exception), and whatever happened, no profiler is left running."""
    try:
        with chatter_filtered():  # the profiler's chatter goes to the job's log, not the cell
            return run()
    except JobFailed as failed:
        raise _failed(failed) from failed.__cause__
    finally:
        if profiler_running():  # a profiler context left open: stop it, never leak it
            _stop_profiler()


def _stop_profiler() -> None:
    import torch

    disable: Optional[Callable[[], Any]] = getattr(torch.autograd, "_disable_profiler", None)
    if disable is not None:
        try:
            disable()
        except RuntimeError as exc:
            print(f"[torchscope] could not stop the profiler: {exc}", file=sys.stderr)


def _profile_outcome(
    prepared: PreparedCall,
    options: Options = None,
    on_progress: Optional[Callable[[Progress], None]] = None,
) -> tuple[ProfileOutcome, Any]:
    """The ``profile`` job's outcome for one prepared call, run in this process, and the
    function it profiled."""
    from torchscope.analysis import TraceError
    from torchscope.host.profile_run import PROFILE

    chosen = job_options(options)
    target = call_target(prepared.func)
    trace = _store().new_path(target.file, target.qualname)
    request = profile_request(target, prepared.source, str(trace), chosen)
    job = InProcessProfileJob(prepared, target, request, on_progress or _ignore, cuda_available())
    result = _guarded(job.run_with_peaks)
    where = target_of(target.function, target.qualname, target.file)
    try:
        return PROFILE.outcome(where, prepared.source, result, []), target.function
    except TraceError as exc:
        raise ProfileError("analysis", str(exc)) from exc


def profile_call(
    prepared: PreparedCall,
    options: Options = None,
    on_progress: Optional[Callable[[Progress], None]] = None,
) -> ProfileReport:
    """Profile one prepared call in this process (the passes of a ``profile`` job)."""
    return ProfileReport(*_profile_outcome(prepared, options, on_progress))


def _source_of(fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> str:
    name = getattr(fn, "__qualname__", None) or type(fn).__name__
    parts = [type(a).__name__ for a in args] + [f"{k}=…" for k in kwargs]
    return f"{name}({', '.join(parts)})"


def profile(fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> ProfileReport:
    """Profile ``fn(*args, **kwargs)`` in this process with the default options; returns the
    report (``.verdict.id``, ``.to_json()``; displayed in a notebook, the HTML report)."""
    return profile_call(PreparedCall(fn, args, kwargs, _source_of(fn, args, kwargs)))


def profile_with(
    options: Options, fn: Callable[..., Any], /, *args: Any, **kwargs: Any
) -> ProfileReport:
    """``profile`` with job options (a ``JobOptions`` or ``{"steps": 10, "memory": True}``)."""
    prepared = PreparedCall(fn, args, kwargs, _source_of(fn, args, kwargs))
    return profile_call(prepared, options)


def prepare(expression: str, namespace: dict[str, Any]) -> PreparedCall:
    """The worker's ``prepare_call`` over ``namespace`` (a notebook's ``user_ns``)."""
    try:
        return prepare_call(expression, namespace)
    except CallExpressionError as exc:
        raise ProfileError(exc.kind, str(exc)) from exc.__cause__


def compare_call(prepared: PreparedCall, options: Options = None) -> ProfileReport:
    """Eager vs ``torch.compile(mode=options.compile_mode)`` (``--compare-compile``), in this
    process: the compiled function stays compiled in it (a worker would be replaced)."""
    from torchscope.analysis import TraceError
    from torchscope.host.compare_run import CompareJobKind
    from torchscope.report.compare import comparison_outcome_text
    from torchscope.worker.jobs.compare import MODES

    chosen = job_options(options)
    if chosen.compile_mode not in MODES:
        raise ProfileError("call-invalid", f"unknown torch.compile mode {chosen.compile_mode!r}")
    target = call_target(prepared.func)
    store = _store()
    trace = store.new_path(target.file, target.qualname)
    compiled = store.new_path(target.file, f"{target.qualname}.compiled")
    request = compare_request(target, prepared.source, str(trace), str(compiled), chosen)
    job = InProcessCompareJob(prepared, target, request, _ignore, cuda_available())
    reply = _guarded(job.compare)
    where = target_of(target.function, target.qualname, target.file)
    kind = CompareJobKind()
    try:
        outcome = kind.outcome(where, prepared.source, reply, [])
    except TraceError as exc:
        raise ProfileError("analysis", str(exc)) from exc
    text, _ = comparison_outcome_text(outcome.compare, outcome.compile_traceback, verbose=True)
    shown = to_builtins(outcome.compare)
    extra = Extra("compare", shown, "Eager vs torch.compile", text.rstrip())
    return ProfileReport(outcome.profile, target.function, extra)


class InProcessExecutor:
    """``host/sweep.py``'s ``Executor`` in this process: each size's call expression is
    evaluated in ``namespace`` and profiled here. It never waits on anything, so ``run_to_end``
    drives the host's sweep loop without an event loop (a kernel's is already running)."""

    def __init__(self, namespace: dict[str, Any]) -> None:
        self.namespace = namespace
        self.trace_store = _store()
        self.function: Any = None  # the function the last size profiled

    async def hello(self) -> Hello:
        import platform

        import torch

        version = platform.python_version()
        return Hello(PROTOCOL_VERSION, version, sys.executable, torch.__version__, cuda_available())

    async def run_job(
        self,
        kind: HostJob[Any, ProfileOutcome],
        target: Target,
        call: Optional[str],
        options: JobOptions,
        on_progress: Optional[Callable[[Progress], None]] = None,
        on_output: Optional[Callable[[Output], None]] = None,
    ) -> ProfileOutcome:
        from torchscope.host.profile_run import PROFILE, ProfileFailure

        if kind is not PROFILE:  # a capture's batch sweep: the CLI's
            message = "in a notebook a sweep fills a placeholder of the call expression"
            raise ProfileFailure("call-invalid", message)
        try:
            prepared = prepare(call or "", self.namespace)
            outcome, self.function = _profile_outcome(prepared, options, on_progress)
        except ProfileError as error:
            raise ProfileFailure(error.kind, error.message, traceback=error.traceback) from error
        return outcome


def run_to_end(coroutine: Coroutine[Any, Any, T]) -> T:
    """The result of a coroutine that never suspends (``InProcessExecutor``'s sweep)."""
    try:
        coroutine.send(None)
    except StopIteration as done:
        return done.value  # type: ignore[no-any-return]
    coroutine.close()
    raise RuntimeError("the in-process sweep waited on an event loop")


def _sweep_target(template: str, name: str, size: int, namespace: dict[str, Any]) -> Target:
    """The function the sweep profiles (the chart's and the table's name), from the call at
    its first size; a call that fails there is the loop's to report."""
    from torchscope.host.sweep import substitute

    try:
        func = prepare(substitute(template, name, size), namespace).func
    except ProfileError:
        return Target("<notebook>", template.split("(")[0].strip(), 0, 0, 0, ())
    called = call_target(func)
    return target_of(called.function, called.qualname, called.file)


def sweep_calls(
    template: str, name: str, sizes: list[int], namespace: dict[str, Any], options: Options = None
) -> ProfileReport:
    """``--sweep NAME=…``: ``template`` (holding ``{NAME}``) profiled at each size by the
    host's sweep loop (``host/sweep.py``) in this process; the report is the largest size's,
    with the sweep's table, chart and JSON."""
    from torchscope.host.profile_run import ProfileFailure
    from torchscope.host.sweep import DEFAULT_SIZES, placeholder, sweep
    from torchscope.report.sweep import render_sweep
    from torchscope.report.sweep_chart import sweep_svg

    if placeholder(name) not in template:
        raise ProfileError(
            "call-invalid",
            f"the call expression has no {placeholder(name)} placeholder for the sweep to fill, "
            f"e.g. fn(torch.randn({placeholder(name)}, {placeholder(name)}))",
        )
    sizes = sizes or list(DEFAULT_SIZES)
    target = _sweep_target(template, name, sizes[0], namespace)
    executor = InProcessExecutor(namespace)
    chosen = job_options(options)
    try:
        done = run_to_end(sweep(executor, target, template, name, sizes, chosen))
    except ProfileFailure as failure:
        cause = failure.__cause__
        user = cause.__cause__ if isinstance(cause, ProfileError) else cause
        raise ProfileError(failure.kind, failure.message, failure.traceback) from user
    if not done.outcomes:
        raise ProfileError("call-raised", f"every size failed: {done.points[0].error}")
    last = ProfileReport(done.outcomes[-1], executor.function)
    title = f"{target.qualname}: compute share across {name}"
    text = render_sweep(done.points, done.sweep.crossover, name, done.device)
    svg = sweep_svg(done.points, done.sweep.crossover, title, name)
    last.extra = Extra("sweep", to_builtins(done.sweep), f"Across {name}", text, svg)
    return last
