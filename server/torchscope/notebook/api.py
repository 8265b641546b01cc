"""``torchscope.profile(fn, *args, **kwargs)``: the worker's passes in this process.

The passes are ``worker/job.py``'s (cold call, warmup, timing without the profiler, profiled
steps with line markers; ``notebook/job.py`` only hands them a prepared call), the analysis is
the host's (``PROFILE.outcome``: ``analyze_trace`` over the exported trace with
``measurements_of`` the result), so the report is the one ``torchscope profile --json`` prints.
``compare_call`` (``--compare-compile``) and ``sweep_calls`` (``--sweep``) are the CLI's
kinds the same way. A failure raises ``ProfileError`` chained to the user's exception.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Callable, Optional, Union

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
from torchscope.protocol import JobOptions, Progress
from torchscope.worker.call_expression import CallExpressionError, PreparedCall, prepare_call
from torchscope.worker.job import JobFailed

Options = Union[JobOptions, Mapping[str, Any], None]


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


def profile_call(
    prepared: PreparedCall,
    options: Options = None,
    on_progress: Optional[Callable[[Progress], None]] = None,
) -> ProfileReport:
    """Profile one prepared call in this process (the passes of a ``profile`` job)."""
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
        outcome = PROFILE.outcome(where, prepared.source, result, [])
    except TraceError as exc:
        raise ProfileError("analysis", str(exc)) from exc
    return ProfileReport(outcome, target.function)


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
    extra = Extra("compare", outcome.compare.to_dict(), "Eager vs torch.compile", text.rstrip())
    return ProfileReport(outcome.profile, target.function, extra)


def sweep_calls(
    template: str, name: str, sizes: list[int], namespace: dict[str, Any], options: Options = None
) -> ProfileReport:
    """``--sweep NAME=…``: ``template`` (holding ``{NAME}``) profiled at each size; the report
    is the largest size's, with the sweep's table, chart and JSON."""
    from torchscope.analysis.multi.sweep import Sweep, crossover, failed_point, point_from_report
    from torchscope.host.sweep import placeholder, substitute
    from torchscope.report.sweep import render_sweep
    from torchscope.report.sweep_chart import sweep_svg

    if placeholder(name) not in template:
        raise ProfileError(
            "call-invalid",
            f"the call expression has no {placeholder(name)} placeholder for the sweep to fill, "
            f"e.g. fn(torch.randn({placeholder(name)}, {placeholder(name)}))",
        )
    points, reports = [], []
    for size in sizes:
        try:
            report = profile_call(prepare(substitute(template, name, size), namespace), options)
        except ProfileError as failure:
            if failure.kind != "call-raised":
                raise
            points.append(failed_point(size, failure.message))
            continue
        reports.append(report)
        points.append(point_from_report(size, report.report, report.trace_path))
    if not reports:
        raise ProfileError("call-raised", f"every size failed: {points[0].error}")
    cross = crossover(points)
    last = reports[-1]
    title = f"{last.outcome.target.qualname}: compute share across {name}"
    sweep = Sweep(name, template, points, cross, None)
    text = render_sweep(points, cross, name, last.report.device.kind)
    svg = sweep_svg(points, cross, title, name)
    last.extra = Extra("sweep", sweep.to_dict(), f"Across {name}", text, svg)
    return last
