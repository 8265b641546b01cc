"""One profiling job: setup → cold call → warmup → timing → profile (DESIGN.md §2).

All passes run in one job, in one process, so each number has one meaning: the cold call is the
first call after import, the timing pass is steady and unprofiled, the profile pass supplies the
structure (which ops, how many, device time) and the profiler's own overhead.

Over 400 lines (412): the passes share one job's state (module, target, timings, CUDA use) in
the order they run, and splitting the class would pass that state between modules; the job's
own room (worker/jobs/profile.py, issue 52) is where it is to be split.
"""

from __future__ import annotations

import dataclasses
import inspect
import statistics
import time
import traceback
from pathlib import Path
from typing import Any, Callable, Optional

from torchscope.protocol import (
    JobError,
    JobRequest,
    Measurements,
    ProfileResult,
    Progress,
)
from torchscope.worker.attribution import marked_call
from torchscope.worker.batch_resize import NoBatchDimension, at_batch
from torchscope.worker.calibrate import job_peaks, torch_device_name
from torchscope.worker.call_expression import (
    CallExpressionError,
    PreparedCall,
    direct_call,
    prepare_call,
)
from torchscope.worker.captures import CaptureError, load_capture
from torchscope.worker.cuda_memory import memory_recording
from torchscope.worker.heap_state import heap_line
from torchscope.worker.line_timing import time_lines
from torchscope.worker.loader import TargetNotFound, import_fresh, resolve_qualname, unwrap
from torchscope.worker.page_faults import fault_cost_us
from torchscope.worker.profiling import TraceWriteError, profile_calls
from torchscope.worker.reach import ReachCheck
from torchscope.worker.stability import MachineLoad, clocked, passes_disagree, unstable_line
from torchscope.worker.timing import TimingSamples, time_calls

STAGES = ("setup", "cold", "warmup", "timing", "profile")


class JobFailed(Exception):
    """Carries the ``JobError`` to send back; raised by any pass that cannot go on."""

    def __init__(self, error: JobError) -> None:
        super().__init__(error.message)
        self.error = error


def _user_frame_line(exc: BaseException, file: str) -> Optional[int]:
    """The deepest line of the user's file in the traceback, to put the error where it happened."""
    line = None
    for frame in traceback.extract_tb(exc.__traceback__):
        if Path(frame.filename).resolve() == Path(file).resolve():
            line = frame.lineno
    return line


def _user_traceback(exc: BaseException) -> str:
    """The traceback without torchscope's own frames, which say nothing to the user."""
    frames = [
        f
        for f in traceback.extract_tb(exc.__traceback__)
        if "/torchscope/worker/" not in f.filename
    ]
    text = "".join(traceback.format_list(frames))
    return f"Traceback (most recent call last):\n{text}{type(exc).__name__}: {exc}\n"


def def_line_of(func: Any) -> int:
    try:
        return inspect.getsourcelines(unwrap(func))[1]
    except (OSError, TypeError):
        return 0


class ProfileJob:
    """Runs the passes of one profile (or of another kind's eager side), reporting progress
    through ``send``."""

    def __init__(self, request: JobRequest, send: Callable[[Any], None], cuda: bool) -> None:
        self.request = request
        self._send = send
        self.cuda_available = cuda and request.options.device != "cpu"
        """The job may use CUDA (``use_cuda`` says whether it does)."""
        self.module: Any = None
        self.target: Any = None
        self.gemm_dtypes: list[str] = []  # what the profiled GEMMs ran in (calibration)
        self.line_us: dict[int, list[float]] = {}  # per line, unprofiled µs per call
        self.profiled_us: list[float] = []  # wall µs of each profiled call (CPU)

    @property
    def use_cuda(self) -> bool:
        """The job uses CUDA (synchronises, profiles kernels, calibrates the GPU) once it asks
        for it: ``--device cuda``, or ``auto`` and the user's code has initialised CUDA (its
        call expression or the function made a CUDA tensor). A CPU function never makes a
        CUDA context here, and is not judged by the GPU's peaks."""
        if not self.cuda_available:
            return False
        if self.request.options.device == "cuda":
            return True
        import torch

        return bool(torch.cuda.is_initialized())

    #: The passes this job reports progress for, in order (a subclass may add its own).
    stages: tuple[str, ...] = STAGES
    #: Time once more when the passes disagree (not on ranks: all must make the same calls).
    retime = True

    def _stage(self, stage: str, message: str) -> None:
        fraction = self.stages.index(stage) / len(self.stages)
        self._send(Progress(self.request.job_id, stage, message, fraction))

    def _fail(self, kind: str, message: str, exc: Optional[BaseException] = None) -> JobFailed:
        line = _user_frame_line(exc, self.request.file) if exc is not None else None
        tb = _user_traceback(exc) if exc is not None else ""
        return JobFailed(JobError(self.request.job_id, kind, message, line, tb))

    def _setup(self) -> tuple[PreparedCall, int]:
        """Import the file, find the target, evaluate the call; keeps module and target."""
        request = self.request
        self._check_device()
        self._stage("setup", f"importing {Path(request.file).name} and evaluating the call")
        root = Path(request.options.workspace_root) if request.options.workspace_root else None
        try:
            module = import_fresh(Path(request.file), root)
        except (Exception, SystemExit) as exc:  # a module may call sys.exit() on import
            raise self._fail(
                "import", f"importing {request.file} raised {type(exc).__name__}: {exc}", exc
            ) from exc
        self.module = module
        try:
            target = resolve_qualname(module, request.qualname)
        except TargetNotFound as exc:
            raise self._fail("target", str(exc)) from exc
        if not callable(target):
            raise self._fail("target", f"{request.qualname} is not a function")
        self.target = target
        return self._arguments(module, target), def_line_of(target)

    def _arguments(self, module: Any, target: Any, at: str = "") -> PreparedCall:
        """The call of ``target`` in ``module`` on the request's inputs: a capture of a real
        call, else the call expression, else no arguments. ``at`` (``"at HEAD: "``) starts the
        message of a failure on another version of the file (the ``diff`` job's earlier side)."""
        request = self.request
        path = request.inputs.path
        if path:  # a capture of a real call (``torchscope run --capture``)
            try:
                prepared = load_capture(path, module, target, self.cuda_available)
            except CaptureError as exc:
                raise self._fail("capture", f"{at}{exc}", exc.__cause__) from exc
            return self._at_batch(prepared) if request.inputs.batch is not None else prepared
        if request.call:
            try:
                return prepare_call(request.call, vars(module))
            except CallExpressionError as exc:
                raise self._fail(exc.kind, f"{at}{exc}", exc.__cause__) from exc
        if _needs_arguments(target):
            owner, _, name = request.qualname.rpartition(".")
            # a method is called on an instance (the directive runs in the module's namespace)
            callee = f"{owner}(...).{name}" if owner and "<" not in owner else name
            raise self._fail(
                "call-missing",
                f"{at}{request.qualname} needs arguments: give a call expression, e.g. a comment "
                f"`# torchscope: {callee}(...)` directly above the def, or --call on the "
                "command line",
            )
        return direct_call(target, request.qualname)

    def _at_batch(self, prepared: PreparedCall) -> PreparedCall:
        """The capture at ``inputs.batch`` (``--sweep batch``; None: as captured); the inputs
        echoed back name the batch size and the captured one."""
        inputs = self.request.inputs
        try:
            prepared, captured, dim, why = at_batch(
                prepared, inputs.batch or None, self.request.qualname, inputs.batch_dim
            )
        except NoBatchDimension as exc:
            raise self._fail("capture", str(exc)) from exc
        inputs.captured_batch = captured
        inputs.batch_dim, inputs.batch_dim_from = dim, why
        inputs.batch = inputs.batch or captured
        return prepared

    def _check_device(self) -> None:
        """``cuda`` asked for where there is none is an error, never a silent CPU profile."""
        if self.request.options.device == "cuda" and not self.use_cuda:
            import sys

            import torch

            raise self._fail(
                "device",
                f"--device cuda was asked for, but torch {torch.__version__} in "
                f"{sys.executable} sees no CUDA device — profile on the CPU with --device cpu "
                "(torchscope.device: cpu), or install a CUDA build of torch where there is a GPU",
            )

    def _call_once(self, prepared: PreparedCall, what: str) -> float:
        start = time.perf_counter()
        try:
            prepared.invoke()
            if self.use_cuda:
                import torch

                torch.cuda.synchronize()
        except Exception as exc:
            raise self._fail(
                "call-raised",
                f"the {what} `{prepared.source}` raised {type(exc).__name__}: {exc}",
                exc,
            ) from exc
        return time.perf_counter() - start

    def _time(self, prepared: PreparedCall, estimate_s: float) -> TimingSamples:
        """The unprofiled timing pass; a call that raises here fails the job like any other."""
        request = self.request
        try:
            return time_calls(
                prepared.invoke,
                estimate_s,
                request.options.timing_calls,
                request.options.timing_budget_s,
                self.use_cuda,
            )
        except Exception as exc:
            raise self._fail(
                "call-raised", f"a timed call raised {type(exc).__name__}: {exc}", exc
            ) from exc

    def _cold_and_warm(self, prepared: PreparedCall, side: str = "") -> tuple[float, float]:
        """The cold call, timed alone, then the warmup calls; returns the cold time and the
        fastest warmup call's time (the estimate the timing pass sizes its batches by: on a
        shared machine any one call can be descheduled, and a batch sized by a call that waited
        10× too long has 10× too few calls to hide the clock's cost)."""
        self._stage("cold", f"first {side}call (cold start)")
        cold_s = self._call_once(prepared, "first call")
        return cold_s, self.warmup(prepared, cold_s, side)

    def warmup(self, prepared: PreparedCall, estimate_s: float, side: str = "") -> float:
        """The warmup calls; the fastest one's time (``estimate_s`` when there are none)."""
        self._stage("warmup", f"{self.request.options.warmup} {side}warmup calls")
        warm = [
            self._call_once(prepared, "warmup call") for _ in range(self.request.options.warmup)
        ]
        return min(warm, default=estimate_s)

    def run(self) -> ProfileResult:
        prepared, def_line = self._setup()
        cold_s, estimate_s = self.first_calls(prepared)
        return self.run_passes(prepared, def_line, cold_s, estimate_s)

    def first_calls(self, prepared: PreparedCall, side: str = "") -> tuple[float, float]:
        """``_cold_and_warm`` on the target's own call, failing the job when those calls never
        reached the target (``worker/reach.py``)."""
        request = self.request
        with ReachCheck(prepared, self.module, request.qualname, self.target, request.file) as c:
            timings = self._cold_and_warm(prepared, side)
        failure = c.failure()
        if failure:
            raise self._fail("target-not-called", failure)
        return timings

    def run_passes(
        self, prepared: PreparedCall, def_line: int, cold_s: float, estimate_s: float
    ) -> ProfileResult:
        """The timing, profile and line passes on ``prepared`` after its cold call (timed by
        the caller: here, or in the user's program by ``worker/jobs/run.py``)."""
        request = self.request
        measured, attribution_note = self._measure(prepared, cold_s, estimate_s)
        import torch

        return ProfileResult(
            job_id=request.job_id,
            trace_path=request.trace_path,
            measured=measured,
            steps=request.options.steps,
            def_line=def_line,
            torch_version=torch.__version__,
            attribution_note=attribution_note,
            inputs=request.inputs,
        )

    def with_peaks(self, result: ProfileResult) -> ProfileResult:
        """``result`` with this machine's peaks for the dtypes its GEMMs used."""
        found = job_peaks(self.request.job_id, self.use_cuda, self.gemm_dtypes, self._send)
        result.measured = dataclasses.replace(result.measured, peaks=found)
        return result

    def _measure(
        self, prepared: PreparedCall, cold_s: float, estimate_s: float
    ) -> tuple[Measurements, str]:
        """The timing pass, then the profile pass; when the two disagree beyond the noise
        (``worker/stability.py``) the timing pass once more. How busy the machine was meanwhile.
        The measurements, and why lines are not attributed ("" when they are)."""
        load = MachineLoad()
        self._stage("timing", "timing steady calls without the profiler")
        samples = self._time(prepared, estimate_s)
        self._stage("profile", f"profiling {self.request.options.steps} calls with line markers")
        cuda_memory: dict[str, Any] = {}
        with memory_recording(self.request, self.use_cuda, cuda_memory):
            attribution_note = self._profile(prepared)
        disagree = passes_disagree(samples.per_call_us, self.profiled_us)
        if disagree and self.retime:
            self._stage("profile", "profiled calls ran faster than unprofiled ones: timing again")
            samples = self._time(prepared, estimate_s)
            disagree = passes_disagree(samples.per_call_us, self.profiled_us)
        machine = load.measured()
        unstable = unstable_line(
            samples.per_call_us,
            self.profiled_us,
            machine,
            disagree,
            twice=self.retime,
            wait_us=samples.wait_us,
        )
        fault_us = fault_cost_us()
        if not unstable and not self.use_cuda:
            unstable = heap_line(prepared.invoke, samples, fault_us)
        device = "cuda" if self.use_cuda else "cpu"
        measured = Measurements(
            cold_us=cold_s * 1e6,
            call_us=samples.per_call_us,
            dispatch_floor_us=statistics.median(samples.floor_us),
            device_kind=device,
            device_name=torch_device_name(device),
            calls=samples.calls,
            threads=samples.threads,
            single_thread_us=samples.single_thread_us,
            page_faults=samples.page_faults,
            page_fault_us=fault_us,
            wait_us=samples.wait_us,
            single_wait_us=samples.single_wait_us,
            cuda_memory=cuda_memory,
            line_us=self.line_us,
            machine=machine,
            unstable=unstable,
        )
        return measured, attribution_note

    def _profile(self, prepared: PreparedCall) -> str:
        """Profile the line-marked copy; fall back to the original if the copy cannot run.
        Returns why lines are not attributed, or "" when they are."""
        request = self.request
        # The trace's traceName: which function and when (Perfetto and other viewers show it).
        when = time.strftime("%Y-%m-%d %H:%M:%S")
        name = f"{Path(request.file).name}::{request.qualname} · {when}"
        marked, note = marked_call(prepared, self.module, request.qualname, self.target)
        if marked is not None:
            try:
                with marked.active():
                    self.gemm_dtypes = profile_calls(
                        clocked(marked.invoke, self.profiled_us, self._clock_steps()),
                        request.options.steps,
                        self.use_cuda,
                        request.trace_path,
                        name,
                        with_stack=request.options.with_stack,
                        profile_memory=request.options.memory,
                    )
                    self.line_us = self._time_lines(marked.invoke)
                return ""
            except Exception as exc:  # the original ran fine: blame the markers, not the user
                note = f"line attribution unavailable: the marked copy raised {exc!r}"
        try:
            self.gemm_dtypes = profile_calls(
                clocked(prepared.invoke, self.profiled_us, self._clock_steps()),
                request.options.steps,
                self.use_cuda,
                request.trace_path,
                name,
                profile_memory=request.options.memory,
            )
        except TraceWriteError as exc:  # no room for the trace (the marked copy's too)
            raise self._fail("trace-write", str(exc)) from exc
        except Exception as exc:
            raise self._fail(
                "call-raised", f"a profiled call raised {type(exc).__name__}: {exc}", exc
            ) from exc
        return note

    def _clock_steps(self) -> int:
        """How many profiled calls ``clocked`` keeps (0 on CUDA: not synchronised one by one)."""
        self.profiled_us.clear()
        return 0 if self.use_cuda else self.request.options.steps

    def _time_lines(self, invoke: Callable[[], Any]) -> dict[int, list[float]]:
        """Each line's unprofiled time per call (``worker/line_timing.py``), over as many
        calls as were profiled; empty when a call raises (the shares are then profiled)."""
        try:
            return time_lines(invoke, self.target, self.request.options.steps, self.use_cuda)
        except Exception:
            return {}


def _needs_arguments(func: Any) -> bool:
    try:
        signature = inspect.signature(func)
    except (TypeError, ValueError):
        return False
    return any(
        p.default is inspect.Parameter.empty
        and p.kind not in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)
        for p in signature.parameters.values()
    )
