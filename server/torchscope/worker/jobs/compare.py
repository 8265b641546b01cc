"""Eager vs ``torch.compile`` in one job: measure the compile, don't assume it helps.

Passes (DESIGN.md §6): setup → eager cold call → eager warmup → *compile* (the compiled
function's first call, timed on its own: Dynamo tracing, Inductor codegen, the C++ build or a
cache load) → compiled warmup → *timing*, eager and compiled in interleaved rounds with no
profiler (each round times one batch of each, the order alternating, so a load spike on a
shared machine hits both sides alike) → eager profile (with line markers) → compiled profile.

A compile that fails (no C++ compiler, an op Inductor cannot lower, an error under Dynamo) is
not a failed job: the eager side runs its timing and profile as usual and the result carries
the compiler's own message. Only torch >= 2.1 APIs are used, each private one guarded.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from typing import Any, Callable, Optional

from torchscope.protocol import (
    COMPILE_MODES,
    CompareRequest,
    CompareResult,
    JobError,
)
from torchscope.worker.ab_rounds import Interleaved, time_interleaved
from torchscope.worker.calibrate import job_peaks
from torchscope.worker.call_expression import PreparedCall
from torchscope.worker.compile_tools import (
    _failure_kind,
    _frames_compiled,
    _graph_breaks,
    _hint,
    _reset_dynamo,
    graph_code_paths,
)
from torchscope.worker.job import JobFailed, ProfileJob, _user_traceback
from torchscope.worker.jobs.sides import side_result
from torchscope.worker.kernel_provenance import (
    NO_PROVENANCE,
    catch_graph_breaks,
    kernel_sources,
    live_graphs,
    provenance_supported,
    provenance_switches,
)
from torchscope.worker.profiling import profile_calls

COMPARE_STAGES = (
    "setup",
    "cold",
    "warmup",
    "compile",
    "compiled-warmup",
    "timing",
    "profile",
    "profile-compiled",
)

MODES = (*COMPILE_MODES, "max-autotune")
"""``torch.compile`` modes a comparison may ask for (the faces offer ``COMPILE_MODES``)."""

MIN_COMPILED_WARMUP = 2
"""Compiled calls after the compile before timing: ``reduce-overhead`` records its CUDA graph
on the second or third call, and a recompile on the second call must not be timed."""

ERROR_CHARS = 6000
"""The compiler's message is kept whole up to this many characters (C++ build logs are long)."""


class CompareJob(ProfileJob):
    """A ``ProfileJob`` for the eager side plus the compiled side; see the module docstring."""

    request: CompareRequest
    stages = COMPARE_STAGES

    def __init__(self, request: CompareRequest, send: Callable[[Any], None], cuda: bool) -> None:
        super().__init__(request, send, cuda)
        self.request = request

    def compare(self) -> CompareResult:
        request = self.request
        options = request.options
        prepared, def_line = self._setup()
        cold_s, estimate_s = self.first_calls(prepared, side="eager ")

        pending = side_result(request, self.use_cuda, request.trace_path, (0.0, [], 0.0), def_line)
        result = CompareResult(job_id=request.job_id, eager=pending, mode=options.compile_mode)
        compiled, compiled_estimate_s = self._compile(prepared, result)
        frames_before = _frames_compiled()
        timed = self._time_both(prepared, compiled, estimate_s, compiled_estimate_s, result)
        if len(timed.call_us) < 2:
            compiled = None

        self._stage("profile", f"profiling {options.steps} eager calls with line markers")
        attribution_note = self._profile(prepared)
        if compiled is not None:
            result.recompiles = max(0, _frames_compiled() - frames_before)
            result.graph_code = graph_code_paths()  # the timed graphs (cached: with keys)
            self._stage("profile-compiled", f"profiling {options.steps} compiled calls")
            try:
                self._profile_compiled(prepared, compiled, result)
            except Exception as exc:
                self._compiled_failed(
                    result, "compiled-call-raised", "a profiled compiled call", exc
                )
                compiled = None
        floor = statistics.median(timed.floor_us)
        peaks = job_peaks(request.job_id, self.use_cuda, self.gemm_dtypes, self._send)
        eager_times = (cold_s * 1e6, timed.call_us[0], floor)
        result.eager = side_result(
            request,
            self.use_cuda,
            request.trace_path,
            eager_times,
            def_line,
            peaks,
            attribution_note,
            (timed, 0) if len(timed.call_us) > 1 else None,
        )
        if compiled is not None:
            compiled_times = ((result.compile_s or 0.0) * 1e6, timed.call_us[1], floor)
            result.compiled = side_result(
                request,
                self.use_cuda,
                request.compiled_trace_path,
                compiled_times,
                def_line,
                peaks,
                rounds=(timed, 1),
            )
        return result

    def _profile_compiled(
        self, prepared: PreparedCall, compiled: PreparedCall, result: CompareResult
    ) -> None:
        """The compiled side's profile. With Inductor's kernel profiling and provenance (issue
        42) the function is compiled afresh with them on, in the job's own Inductor folder,
        and profiled; the timing pass ran the first compile, without them. The folder goes when
        the profile is written (the generated code linked is the timed compile's). Without them
        (an older torch, or the recompile failing) the timed compiled function is profiled."""
        request = self.request
        options = request.options

        def profile(call: PreparedCall) -> None:
            dtypes = profile_calls(
                call.invoke,
                options.steps,
                self.use_cuda,
                request.compiled_trace_path,
                with_stack=options.with_stack,
            )
            self.gemm_dtypes = sorted({*self.gemm_dtypes, *dtypes})

        if not provenance_supported():
            result.provenance_note = NO_PROVENANCE
            profile(compiled)
            return
        try:
            with (
                tempfile.TemporaryDirectory(prefix="torchscope-inductor-") as folder,
                provenance_switches(folder),
            ):
                earlier = live_graphs()  # the notebook's process may hold other jobs' graphs
                with catch_graph_breaks() as sites:
                    _reset_dynamo()
                    traced = self._compiled_call(prepared)
                    for _ in range(MIN_COMPILED_WARMUP + 1):
                        self._invoke_synced(traced)
                profile(traced)
        except Exception as exc:
            result.provenance_note = (
                f"recompiling with Inductor's provenance tracking failed ({type(exc).__name__}:"
                f" {str(exc)[:200]}): the compiled side is compared per call only"
            )
            profile(compiled)
            return
        sources = kernel_sources(request.file, earlier)
        result.kernel_sources = list(sources)
        result.graph_break_sites = list(sites)
        if not result.kernel_sources:
            result.provenance_note = "Inductor recorded no kernel provenance for this function"

    def _compiled_call(self, prepared: PreparedCall) -> PreparedCall:
        import torch

        mode = self.request.options.compile_mode
        kwargs: dict[str, Any] = {} if mode == "default" else {"mode": mode}
        compiled_fn = torch.compile(prepared.func, **kwargs)
        return PreparedCall(
            compiled_fn, prepared.args, prepared.kwargs, f"torch.compile({prepared.source})"
        )

    def _time_both(
        self,
        prepared: PreparedCall,
        compiled: Optional[PreparedCall],
        estimate_s: float,
        compiled_estimate_s: float,
        result: CompareResult,
    ) -> Interleaved:
        """Eager and compiled timed in alternating rounds (``ab_rounds``); eager alone (one
        side) when there is no compiled side (or it raised here)."""
        options = self.request.options
        self._stage("timing", "timing eager and compiled calls in alternating rounds")
        if compiled is not None:
            try:
                return time_interleaved(
                    [prepared.invoke, compiled.invoke],
                    [estimate_s, compiled_estimate_s],
                    options.timing_calls,
                    options.timing_budget_s,
                    self.use_cuda,
                )
            except Exception as exc:  # both ran before: the compiled side is the suspect
                self._compiled_failed(result, "compiled-call-raised", "a timed compiled call", exc)
        samples = self._time(prepared, estimate_s)
        return Interleaved([samples.per_call_us], [samples.wait_us], samples.floor_us)

    def _compile(
        self, prepared: PreparedCall, result: CompareResult
    ) -> tuple[Optional[PreparedCall], float]:
        """Compile the callee, time its first call (the compile) and warm it up.

        Returns the compiled call and its per-call estimate, or None after recording why.
        """

        mode = self.request.options.compile_mode
        self._stage("compile", f"torch.compile(mode={mode!r}): compiling on the first call")
        _reset_dynamo()
        try:
            compiled = self._compiled_call(prepared)
        except Exception as exc:
            self._compiled_failed(result, "compile-failed", "torch.compile", exc)
            return None, 0.0
        start = time.perf_counter()
        try:
            self._invoke_synced(compiled)
        except Exception as exc:
            self._compiled_failed(result, _failure_kind(exc), "the first compiled call", exc)
            return None, 0.0
        result.compile_s = time.perf_counter() - start
        self._stage("compiled-warmup", "compiled warmup calls")
        estimate_s = result.compile_s
        try:
            for _ in range(max(self.request.options.warmup, MIN_COMPILED_WARMUP)):
                start = time.perf_counter()
                self._invoke_synced(compiled)
                estimate_s = time.perf_counter() - start
        except Exception as exc:
            self._compiled_failed(result, _failure_kind(exc), "a compiled warmup call", exc)
            return None, 0.0
        result.graph_breaks = _graph_breaks()
        return compiled, estimate_s

    def _invoke_synced(self, prepared: PreparedCall) -> None:
        prepared.invoke()
        if self.use_cuda:
            import torch

            torch.cuda.synchronize()

    def _compiled_failed(
        self, result: CompareResult, kind: str, what: str, exc: BaseException
    ) -> None:
        text = f"{type(exc).__name__}: {exc}".strip()
        if len(text) > ERROR_CHARS:
            text = text[:ERROR_CHARS] + f"\n… ({len(text) - ERROR_CHARS} more characters)"
        hint = _hint(text)
        result.compile_error = (
            f"torch.compile(mode={self.request.options.compile_mode!r}) failed in {what}: {text}"
            + (f"\n{hint}" if hint else "")
        )
        result.compile_error_kind = kind
        result.compile_traceback = _user_traceback(exc)


def run_compare(request: CompareRequest, send: Callable[[Any], None], cuda: bool) -> CompareResult:
    """The ``compare`` job kind; a ``JobFailed`` propagates to the main loop."""
    mode = request.options.compile_mode
    if mode not in MODES:
        raise JobFailed(
            JobError(
                request.job_id,
                "call-invalid",
                f"unknown torch.compile mode {mode!r}: use one of {', '.join(MODES)}",
            )
        )
    return CompareJob(request, send, cuda).compare()
