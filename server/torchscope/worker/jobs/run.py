"""The ``run`` job kind: run the user's program and profile the targets on the arguments it
really passes them (``torchscope run``, docs/real-inputs.md).

Every call of a target goes through ``RunSession.on_call`` (``worker/run_hooks.py``). The first
is timed as the cold call, the next ones unprofiled (the program's own calls: ``in_run_us``);
at call ``calls`` the arguments are captured when asked, and the profile job's own passes
(``ProfileJob.warmup`` and ``run_passes``: timing, profile with line markers, line timing,
memory) run on that call's arguments — one code path for a call expression, a capture and a
run. Then the program is stopped (``StopProgram``) once every target is done, unless
``let_finish`` (or a pytest entry, whose pass/fail is part of the answer). A target called
inside another's timed call (a nested function, a layer of a model) may be profiled there:
the time of its passes is taken out of the enclosing call's time.
"""

from __future__ import annotations

import collections
import os
import sys
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional

from torchscope.protocol import (
    CallSeen,
    Capture,
    Inputs,
    JobError,
    ProfileRequest,
    ProfileResult,
    Progress,
    RunRequest,
    RunResult,
    TargetReport,
    is_train_call,
)
from torchscope.worker.call_expression import PreparedCall
from torchscope.worker.call_modes import BOOTSTRAP, call_mode, call_shapes, caller_of, selected
from torchscope.worker.captures import save_capture, save_output
from torchscope.worker.job import JobFailed, ProfileJob, def_line_of
from torchscope.worker.loader import forget_modules_under
from torchscope.worker.page_faults import minor_faults
from torchscope.worker.run_entry import StopProgram, program_traceback, run_entry
from torchscope.worker.run_hooks import Hooks

_OURS = str(Path(__file__).resolve().parents[1])  # worker/: never a caller
#: After profiling only evaluation calls (``--mode any``), how long the program may run on for
#: training calls to time, and how many of them are enough.
WATCH_S = 10.0
WATCH_CALLS = 3
#: Calls in another mode kept for the report.
OTHER_CALLS_KEPT = 20
#: One call of a target: the function, its positional and keyword arguments.
_Invocation = tuple[Callable[..., Any], tuple[Any, ...], dict[str, Any]]


@dataclass
class _Target:
    file: str
    qualname: str
    trace_path: str
    capture_path: str
    calls: int = 0
    chosen: int = 0  # calls in the ``--mode`` asked for
    callers: collections.Counter[tuple[str, int]] = field(default_factory=collections.Counter)
    timed: list[CallSeen] = field(default_factory=list)  # ``run.calls``
    other_calls: list[CallSeen] = field(default_factory=list)  # in another mode
    watch_until: float = 0.0  # after the profile: looking for calls in another mode
    cold_us: Optional[float] = None
    in_run_us: list[float] = field(default_factory=list)
    last: Optional[_Invocation] = None
    profile: Optional[ProfileResult] = None
    error: Optional[JobError] = None
    capture: Optional[Capture] = None

    @property
    def done(self) -> bool:
        return self.profile is not None or self.error is not None

    def report(self, loaded: bool) -> TargetReport:
        return TargetReport(
            file=self.file,
            qualname=self.qualname,
            calls_seen=self.calls,
            callers=[(f, line, n) for (f, line), n in self.callers.most_common()],
            loaded=loaded,
            cold_us=self.cold_us,
            in_run_us=self.in_run_us,
            calls=self.timed,
            other_calls=self.other_calls,
            profile=self.profile,
            error=self.error,
            capture=self.capture,
        )


def _skipped_dirs() -> tuple[str, ...]:
    """Frames in these folders are not callers: torch's ``Module.__call__``, our hook, the
    interpreter's bootstrap (``<string>``, ``runpy``)."""
    import torch

    torch_dir = Path(torch.__file__).parent  # as frames name it, and resolved (a linked venv)
    dirs = {str(torch_dir) + os.sep, str(torch_dir.resolve()) + os.sep, _OURS + os.sep}
    return (*sorted(dirs), *BOOTSTRAP)


class RunSession:
    """One run: the hooks, the program, and each target's calls and profile."""

    def __init__(self, request: RunRequest, send: Callable[[Any], None], cuda: bool) -> None:
        self.request = request
        self.send = send
        self.cuda = cuda and request.options.device != "cpu"
        self.targets = {
            (str(Path(t.file).resolve()), t.qualname): _Target(
                str(Path(t.file).resolve()), t.qualname, t.trace_path, t.capture_path
            )
            for t in request.targets
        }
        self._profiling = False
        self._profiling_s = 0.0  # spent in the passes: not part of an enclosing target's call
        self._skipped = _skipped_dirs()

    def _progress(self, stage: str, message: str) -> None:
        self.send(Progress(self.request.job_id, stage, message, 0.0))

    def run(self) -> RunResult:
        request = self.request
        if request.options.workspace_root:  # the program imports the workspace fresh
            forget_modules_under(Path(request.options.workspace_root))
        names = ", ".join(t.qualname for t in self.targets.values())
        hooks = Hooks([(t.file, t.qualname) for t in self.targets.values()], self.on_call)
        self._progress("waiting", f"running the program: waiting for the first call of {names}")
        try:
            outcome = run_entry(
                request.entry_kind,
                request.entry_target,
                request.entry_args,
                hooks.files,
                request.cwd,
            )
        finally:
            hooks.remove()
        for target in self.targets.values():  # fewer calls than asked: profile the last one
            if not target.done and target.last is not None:
                fn, args, kwargs = target.last
                self._profile(target, fn, args, kwargs)
        return RunResult(
            job_id=request.job_id,
            exit=outcome.exit,
            exit_code=outcome.code,
            error=outcome.error,
            traceback=outcome.traceback,
            stderr_tail=outcome.stderr_tail,
            test=outcome.test,
            targets=[t.report(hooks.loaded(t.file)) for t in self.targets.values()],
        )

    def _caller(self) -> tuple[str, int]:
        frame = sys._getframe(2)
        while frame.f_back is not None and frame.f_code.co_filename.startswith(self._skipped):
            frame = frame.f_back
        return frame.f_code.co_filename, frame.f_lineno

    def on_call(
        self,
        file: str,
        qualname: str,
        fn: Callable[..., Any],
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
    ) -> Any:
        target = self.targets.get((file, qualname))
        if target is None or self._profiling:
            return fn(*args, **kwargs)
        target.calls += 1
        target.callers[self._caller()] += 1
        training, grad = call_mode(qualname, args)
        call = CallSeen(0.0, training, grad)
        if target.done:  # --let-finish, or watching for calls in another mode
            return self._after_profile(target, (fn, args, kwargs), call)
        if not selected(self.request.mode, training, grad):
            return self._other_mode(target, (fn, args, kwargs), call)
        target.chosen += 1
        seen = f"calls seen: {target.chosen} of {self.request.calls}"
        if target.chosen == 1:
            where = "{}:{}".format(*target.callers.most_common(1)[0][0])
            self._progress("called", f"first call of {qualname} (from {where}), {seen}")
        else:
            self._progress("calls", f"{qualname}: {seen}")
        last = target.chosen >= self.request.calls
        if last and target.capture_path:
            target.capture = save_capture(
                target.capture_path, fn, qualname, args, kwargs, self.request.capture_limit
            )
        call.caller = caller_of(sys._getframe(1), self._skipped, file)
        result, seconds = self._timed_call(target, (fn, args, kwargs), call)
        target.timed.append(call)
        if target.cold_us is None:
            target.cold_us = seconds * 1e6
        else:
            target.in_run_us.append(seconds * 1e6)
        target.last = (fn, args, kwargs)
        if last:
            if target.capture is not None and target.capture.written:
                save_output(target.capture_path, result)
            self._profile(target, fn, args, kwargs)
            self._watch(target)
            if self._stop_now():
                raise StopProgram()
        return result

    def _other_mode(self, target: _Target, invocation: _Invocation, call: CallSeen) -> Any:
        """A call in another mode than ``--mode``'s: timed for the report (a few), not counted."""
        fn, args, kwargs = invocation
        if len(target.other_calls) >= OTHER_CALLS_KEPT:
            return fn(*args, **kwargs)
        call.caller = caller_of(sys._getframe(2), self._skipped, target.file)
        result, _ = self._timed_call(target, invocation, call)
        target.other_calls.append(call)
        return result

    def _watch(self, target: _Target) -> None:
        """With ``--mode any`` and only evaluation calls profiled, keep the program running a
        little (``WATCH_S``) to time the training calls that may follow (``estimate_loss``
        before the first step): the report then says how they differ."""
        if self.request.mode != "any" or self.request.let_finish or target.other_calls:
            return
        if not any(is_train_call(c.training, c.grad_enabled) for c in target.timed):
            target.watch_until = time.monotonic() + WATCH_S
            self._progress(
                "watching",
                f"{target.qualname}: only evaluation calls so far; timing the training calls "
                f"that follow (at most {WATCH_S:g} s)",
            )

    def _after_profile(self, target: _Target, invocation: _Invocation, call: CallSeen) -> Any:
        """A call after the profile: counted; while watching, one in another mode is timed."""
        fn, args, kwargs = invocation
        if not target.watch_until:
            return fn(*args, **kwargs)
        if is_train_call(call.training, call.grad_enabled):
            result = self._other_mode(target, invocation, call)
        else:
            result = fn(*args, **kwargs)
        if len(target.other_calls) >= WATCH_CALLS or time.monotonic() > target.watch_until:
            target.watch_until = 0.0
            if self._stop_now():
                raise StopProgram()
        return result

    def _stop_now(self) -> bool:
        request = self.request
        if request.let_finish or request.entry_kind == "pytest":
            return False
        return all(t.done and not t.watch_until for t in self.targets.values())

    def _timed_call(
        self, target: _Target, invocation: _Invocation, call: CallSeen
    ) -> tuple[Any, float]:
        """One of the program's calls, timed into ``call`` with its shapes and page faults; a
        call that raises is the target's error (its message and traceback), and the exception
        goes on to the program as it would have without torchscope."""
        fn, args, kwargs = invocation
        call.shapes = call_shapes(args, kwargs)
        before = minor_faults()
        try:
            result, seconds = self._timed(fn, args, kwargs)
        except Exception as exc:
            if target.error is None and target.profile is None:
                target.error = raised_error(self.request.job_id, target, call, exc)
            raise
        call.faults = minor_faults() - before
        call.us = seconds * 1e6
        return result, seconds

    def _timed(
        self, fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> tuple[Any, float]:
        sync: Callable[[], None] = lambda: None  # noqa: E731
        if self.cuda:
            import torch

            sync = torch.cuda.synchronize
        sync()
        start, passes = time.perf_counter(), self._profiling_s
        result = fn(*args, **kwargs)
        sync()
        return result, time.perf_counter() - start - (self._profiling_s - passes)

    def _profile(
        self,
        target: _Target,
        fn: Callable[..., Any],
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
    ) -> None:
        """The profile job's passes on this call's arguments (the program waits meanwhile)."""
        capture = target.capture
        request = ProfileRequest(
            job_id=self.request.job_id,
            file=target.file,
            qualname=target.qualname,
            call=None,
            trace_path=target.trace_path,
            options=self.request.options,
            inputs=Inputs("run", capture.path, _now_iso())
            if capture is not None and capture.written
            else Inputs("run"),
        )
        job = ProfileJob(request, self.send, self.cuda)
        job.target, job.module = fn, sys.modules.get(getattr(fn, "__module__", "") or "")
        prepared = PreparedCall(fn, args, kwargs, f"{target.qualname}(<the program's arguments>)")
        cold_s = (target.cold_us or 0.0) / 1e6
        self._profiling = True
        start = time.perf_counter()
        try:
            estimate_s = job.warmup(prepared, min([cold_s, *(u / 1e6 for u in target.in_run_us)]))
            result = job.run_passes(prepared, def_line_of(fn), cold_s, estimate_s)
            target.profile = job.with_peaks(result)
        except JobFailed as failed:
            target.error = failed.error
        finally:
            self._profiling = False
            self._profiling_s += time.perf_counter() - start
            target.last = None


def raised_error(job_id: int, target: _Target, call: CallSeen, exc: BaseException) -> JobError:
    """``Net.forward raised RuntimeError: … on call 1 (from <module> (train.py:17))``, with the
    program's frames of its traceback and the line of the target's file it was raised on."""
    line = None
    for frame in traceback.extract_tb(exc.__traceback__):
        if frame.filename and str(Path(frame.filename).resolve()) == target.file:
            line = frame.lineno
    where = f" (from {call.caller})" if call.caller else ""
    message = f"{target.qualname} raised {type(exc).__name__}: {exc} on call {target.calls}{where}"
    return JobError(job_id, "call-raised", message, line, program_traceback(exc))


def _now_iso() -> str:
    import datetime

    return datetime.datetime.now().astimezone().isoformat(timespec="seconds")


def run_program(request: RunRequest, send: Callable[[Any], None], cuda: bool) -> RunResult:
    return RunSession(request, send, cuda).run()
