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

import dataclasses
import gc
import os
import statistics
import time
from collections.abc import Iterable
from typing import Any, Callable, Optional, Union

from torchscope.protocol import (
    CompareRequest,
    CompareResult,
    DiffRequest,
    DiffResult,
    JobError,
    ProfileRequest,
    ProfileResult,
)
from torchscope.worker.call_expression import PreparedCall
from torchscope.worker.job import JobFailed, ProfileJob, _cpu_name, _user_traceback
from torchscope.worker.profiling import profile_calls
from torchscope.worker.timing import (
    FLOOR_BATCH,
    MIN_FLOOR_SAMPLES,
    _floor_op,
    _synchronizer,
    _time_batch,
)

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

MODES = ("default", "reduce-overhead", "max-autotune-no-cudagraphs", "max-autotune")
"""``torch.compile`` modes a comparison may ask for."""

PAIR_SAMPLE_S = 1e-3
"""Each interleaved sample is a batch lasting at least this long: long enough for the clock
to vanish and for the two sides' batches to sit within a few milliseconds of each other."""

MAX_PAIR_BATCH = 10_000

MIN_ROUNDS = 5
"""Rounds timed even when the budget runs out (a slow function still gets a median of 5)."""

MAX_ROUNDS = 200
"""Rounds stop here or when the timing budget (twice a profile's: two sides) is spent. The
more rounds, the steadier the median ratio: at 1024×1024 (~25 ms a call) the budget allows
~80, where 20 left a 7 % swing between runs on a shared 2-core machine."""

MIN_COMPILED_WARMUP = 2
"""Compiled calls after the compile before timing: ``reduce-overhead`` records its CUDA graph
on the second or third call, and a recompile on the second call must not be timed."""

REASON_CHARS = 800
"""A graph-break reason is cut here (Dynamo's come with hints and a link)."""

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
        prepared, def_line = self._setup()
        cold_s, estimate_s = self._cold_and_warm(prepared, side="eager ")

        result = CompareResult(job_id=request.job_id, eager={}, mode=request.mode)
        compiled, compiled_estimate_s = self._compile(prepared, result)
        frames_before = _frames_compiled()
        eager_us: list[float] = []
        compiled_us: list[float] = []
        floor_us: list[float] = []

        self._stage("timing", "timing eager and compiled calls in alternating rounds")
        steady_allocator()
        if compiled is not None:
            try:
                (eager_us, compiled_us), floor_us = time_interleaved(
                    [prepared.invoke, compiled.invoke],
                    [estimate_s, compiled_estimate_s],
                    max(request.timing_calls, MAX_ROUNDS),
                    2 * request.timing_budget_s,
                    self.use_cuda,
                )
            except Exception as exc:  # both ran before: the compiled side is the suspect
                self._compiled_failed(result, "compiled-call-raised", "a timed compiled call", exc)
                compiled = None
        if compiled is None:
            samples = self._time(prepared, estimate_s)
            eager_us, floor_us = samples.per_call_us, samples.floor_us
        else:
            result.paired_ratios = [c / e for e, c in zip(eager_us, compiled_us) if e > 0]

        self._stage("profile", f"profiling {request.steps} eager calls with line markers")
        attribution_note = self._profile(prepared)
        if compiled is not None:
            self._stage("profile-compiled", f"profiling {request.steps} compiled calls")
            try:
                profile_calls(
                    compiled.invoke, request.steps, self.use_cuda, request.compiled_trace_path
                )
            except Exception as exc:
                self._compiled_failed(
                    result, "compiled-call-raised", "a profiled compiled call", exc
                )
                compiled = None
        import torch

        floor = statistics.median(floor_us)
        device_name = torch.cuda.get_device_name(0) if self.use_cuda else _cpu_name()
        common: dict[str, Any] = {
            "job_id": request.job_id,
            "dispatch_floor_us": floor,
            "device_kind": "cuda" if self.use_cuda else "cpu",
            "device_name": device_name,
            "steps": request.steps,
            "def_line": def_line,
            "torch_version": torch.__version__,
        }
        result.eager = dataclasses.asdict(
            ProfileResult(
                trace_path=request.trace_path,
                cold_us=cold_s * 1e6,
                call_us=eager_us,
                attribution_note=attribution_note,
                **common,
            )
        )
        if compiled is not None:
            result.compiled = dataclasses.asdict(
                ProfileResult(
                    trace_path=request.compiled_trace_path,
                    cold_us=(result.compile_s or 0.0) * 1e6,
                    call_us=compiled_us,
                    **common,
                )
            )
            result.recompiles = max(0, _frames_compiled() - frames_before)
            result.graph_code = graph_code_paths()
        return result

    def _compile(
        self, prepared: PreparedCall, result: CompareResult
    ) -> tuple[Optional[PreparedCall], float]:
        """Compile the callee, time its first call (the compile) and warm it up.

        Returns the compiled call and its per-call estimate, or None after recording why.
        """
        import torch

        mode = self.request.mode
        self._stage("compile", f"torch.compile(mode={mode!r}): compiling on the first call")
        _reset_dynamo()
        kwargs: dict[str, Any] = {} if mode == "default" else {"mode": mode}
        try:
            compiled_fn = torch.compile(prepared.func, **kwargs)
        except Exception as exc:
            self._compiled_failed(result, "compile-failed", "torch.compile", exc)
            return None, 0.0
        compiled = PreparedCall(
            compiled_fn, prepared.args, prepared.kwargs, f"torch.compile({prepared.source})"
        )
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
            for _ in range(max(self.request.warmup, MIN_COMPILED_WARMUP)):
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
            f"torch.compile(mode={self.request.mode!r}) failed in {what}: {text}"
            + (f"\n{hint}" if hint else "")
        )
        result.compile_error_kind = kind
        result.compile_traceback = _user_traceback(exc)


def time_interleaved(
    invokes: list[Callable[[], Any]],
    estimates_s: list[float],
    rounds: int,
    budget_s: float,
    use_cuda: bool,
) -> tuple[list[list[float]], list[float]]:
    """Per-call µs of each callable, one batch per side per round, alternating the order
    (A B, B A, …), for ``MIN_ROUNDS`` to ``rounds`` rounds until ``budget_s`` is spent; plus
    the per-op dispatch floor, one batch per round.

    Each batch follows one untimed call of the same side (``settle``): switching sides leaves
    the allocator and the caches in the other side's state. At 1024×1024 on the CPU, eager
    right after a compiled call paid ~1000 page faults (glibc had trimmed the heap top the
    compiled call freed), 10 % of its time, which it never pays when run on its own."""
    sync = _synchronizer(use_cuda)
    no_sync = _synchronizer(False)
    floor_op = _floor_op()
    for _ in range(FLOOR_BATCH):
        floor_op()
    batches = [min(MAX_PAIR_BATCH, max(1, int(PAIR_SAMPLE_S / max(e, 1e-9)))) for e in estimates_s]
    samples: list[list[float]] = [[] for _ in invokes]
    floor_us: list[float] = []
    clock = time.perf_counter
    deadline = clock() + budget_s
    done = 0
    order = list(range(len(invokes)))
    while done < rounds and (done < MIN_ROUNDS or clock() < deadline):
        for k in order if done % 2 == 0 else order[::-1]:
            invokes[k]()  # settle (see above)
            samples[k].append(_time_batch(invokes[k], batches[k], sync))
        floor_us.append(_time_batch(floor_op, FLOOR_BATCH, no_sync))
        done += 1
    while len(floor_us) < MIN_FLOOR_SAMPLES:
        floor_us.append(_time_batch(floor_op, FLOOR_BATCH, no_sync))
    return samples, floor_us


GLIBC_MMAP_THRESHOLD = 32 * 1024 * 1024
"""glibc's own ceiling for its dynamic mmap threshold on 64-bit (``DEFAULT_MMAP_THRESHOLD_MAX``):
blocks above it are mapped and unmapped per allocation, as they are by default."""

GLIBC_NO_TRIM = 2**31 - 1
"""``M_TRIM_THRESHOLD`` high enough that the heap top is never given back during the job."""


def steady_allocator() -> None:
    """Put glibc's heap in a steady state before eager and compiled are timed in turns.

    Two functions that each allocate and free megabytes per call, run in alternation, make
    glibc's dynamic thresholds trim the heap and fault the pages back in at every switch — a
    cost neither pays when run on its own (at 1024×1024: ~500-2000 page faults per call,
    5-15 % of the time, landing on one side or the other from run to run). Importing Inductor
    alone switched eager ``fn`` into that state for the life of the process. So: give free
    memory back (``malloc_trim(0)``), then fix the mmap threshold at glibc's own maximum and
    stop trimming. The worker is replaced after a comparison (``host.compare_run``), so later
    jobs never run with these settings. A no-op where glibc is not the allocator.
    """
    try:
        import ctypes
        import ctypes.util

        name = ctypes.util.find_library("c")
        libc = ctypes.CDLL(name) if name else None
        trim = getattr(libc, "malloc_trim", None)
        mallopt = getattr(libc, "mallopt", None)
        if trim is None or mallopt is None:
            return
        trim(0)
        mallopt(-3, GLIBC_MMAP_THRESHOLD)  # M_MMAP_THRESHOLD
        mallopt(-1, GLIBC_NO_TRIM)  # M_TRIM_THRESHOLD
    except Exception:
        pass


def _reset_dynamo() -> None:
    """Forget earlier jobs' compiled code so this job compiles (and counts) afresh."""
    try:
        import torch._dynamo

        torch._dynamo.reset()
        from torch._dynamo.utils import counters

        counters.clear()
    except Exception:
        pass


def _counter(group: str) -> dict[str, int]:
    try:
        from torch._dynamo.utils import counters

        return {str(k): int(v) for k, v in dict(counters.get(group, {})).items()}
    except Exception:
        return {}


def _frames_compiled() -> int:
    """Frames Dynamo has started compiling (a cache hit does not count)."""
    return _counter("frames").get("total", 0)


def _graph_breaks() -> list[str]:
    """Dynamo's graph-break reasons with their counts, in its own words."""
    breaks = {reason[:REASON_CHARS]: n for reason, n in _counter("graph_break").items()}
    return [
        f"{reason} (×{count})" if count > 1 else reason
        for reason, count in sorted(breaks.items(), key=lambda kv: -kv[1])
    ]


def _failure_kind(exc: BaseException) -> str:
    """A failure inside torch's compiler stack, or the user's code raising under compile."""
    module = type(exc).__module__ or ""
    name = type(exc).__name__
    compiler = module.startswith(("torch._dynamo", "torch._inductor", "torch.fx")) or name in (
        "BackendCompilerFailed",
        "InductorError",
        "CppCompileError",
        "InvalidCxxCompiler",
        "Unsupported",
    )
    return "compile-failed" if compiler else "compiled-call-raised"


def _hint(text: str) -> str:
    if "InvalidCxxCompiler" in text or "No working C++ compiler" in text:
        return (
            "Inductor's CPU backend needs a C++ compiler: install g++ (or clang++), or point "
            "the CXX environment variable at one."
        )
    if "CppCompileError" in text:
        return "The C++ compiler ran but failed on the generated code (its output is above)."
    return ""


def graph_code_paths() -> dict[str, str]:
    """FX graph cache key → path of the Python file Inductor generated for it.

    The key is the hash in the trace's ``## Call CompiledFxGraph <key> ##`` annotation. The
    objects are found by type name (``CompiledFxGraph`` moved modules between torch releases).
    """
    found: dict[str, str] = {}
    try:
        objects: Iterable[Any] = gc.get_objects()
    except Exception:
        return found
    for obj in objects:
        try:
            if type(obj).__name__ != "CompiledFxGraph":
                continue
            key = getattr(obj, "_fx_graph_cache_key", None) or getattr(obj, "cache_key", None)
            path = _code_path(obj)
            if isinstance(key, str) and key and path:
                found[key] = path
        except Exception:
            continue
    return found


def _code_path(graph: Any) -> Optional[str]:
    callable_ = getattr(graph, "current_callable", None)
    filename = getattr(getattr(callable_, "__code__", None), "co_filename", None)
    wrapper = f"torch{os.sep}_inductor{os.sep}" in str(filename)  # a torch wrapper, not the code
    if (
        isinstance(filename, str)
        and filename.endswith(".py")
        and not wrapper
        and (os.path.isfile(filename))
    ):
        return filename
    key = getattr(graph, "cache_key", None)
    try:
        from torch._inductor.codecache import PyCodeCache

        modules: Iterable[Any] = list(getattr(PyCodeCache, "modules", []) or []) + list(
            getattr(PyCodeCache, "cache", {}).values()
        )
    except Exception:
        return None
    for module in modules:
        file = getattr(module, "__file__", None)
        if isinstance(key, str) and isinstance(file, str) and key in os.path.basename(file):
            return file
    return None


def run_request(
    request: ProfileRequest, send: Callable[[Any], None], cuda: bool
) -> Union[ProfileResult, CompareResult, DiffResult]:
    """Run a profile, compare or diff job; a ``JobFailed`` propagates to the main loop."""
    if isinstance(request, DiffRequest):
        from torchscope.worker.diff_job import run_diff

        return run_diff(request, send, cuda)
    if isinstance(request, CompareRequest):
        if request.mode not in MODES:
            raise JobFailed(
                JobError(
                    request.job_id,
                    "call-invalid",
                    f"unknown torch.compile mode {request.mode!r}: use one of {', '.join(MODES)}",
                )
            )
        return CompareJob(request, send, cuda).compare()
    return ProfileJob(request, send, cuda).run()
