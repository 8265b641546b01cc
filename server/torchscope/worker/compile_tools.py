"""What a compile comparison needs from torch beyond a profile: interleaved timing, a steady
allocator, Dynamo's counters and the code Inductor generated (``worker/jobs/compare.py`` runs
the passes). Only torch >= 2.1 APIs are used, each private one guarded.
"""

from __future__ import annotations

import gc
import os
import time
from collections.abc import Iterable
from typing import Any, Callable, Optional

from torchscope.protocol import GLIBC_MMAP_MAX
from torchscope.worker.heap_state import glibc
from torchscope.worker.timing import (
    FLOOR_BATCH,
    MIN_FLOOR_SAMPLES,
    _floor_batch,
    _floor_op,
    _synchronizer,
    _time_batch,
)

PAIR_SAMPLE_S = 1e-3
"""Each interleaved sample is a batch lasting at least this long: long enough for the clock
to vanish and for the two sides' batches to sit within a few milliseconds of each other."""

MAX_PAIR_BATCH = 10_000

MIN_ROUNDS = 5
"""Rounds timed even when the budget runs out (a slow function still gets a median of 5)."""

REASON_CHARS = 800
"""A graph-break reason is cut here (Dynamo's come with hints and a link)."""


MAX_ROUNDS = 200
"""Rounds stop here (or at ``timing_calls``, if higher) or when the timing budget, a profile's
``timing_budget_s`` per side, is spent. The more rounds, the steadier the median ratio: at
1024×1024 (~25 ms a call) the budget allows ~80, where 20 left a 7 % swing between runs on a
shared 2-core machine."""


def time_interleaved(
    invokes: list[Callable[[], Any]],
    estimates_s: list[float],
    timing_calls: int,
    timing_budget_s: float,
    use_cuda: bool,
) -> tuple[list[list[float]], list[float]]:
    """Per-call µs of each callable, one batch per side per round, alternating the order
    (A B, B A, …), for ``MIN_ROUNDS`` to ``max(timing_calls, MAX_ROUNDS)`` rounds until
    ``timing_budget_s`` per side is spent; plus the per-op dispatch floor, one batch per round.

    Each batch follows one untimed call of the same side (``settle``): switching sides leaves
    the allocator and the caches in the other side's state. At 1024×1024 on the CPU, eager
    right after a compiled call paid ~1000 page faults (glibc had trimmed the heap top the
    compiled call freed), 10 % of its time, which it never pays when run on its own. So the
    heap is put in a steady state first (:func:`steady_allocator`; the job's worker is replaced
    afterwards): a fix's trial (``diff`` job) measured SDPA 3.3× faster than the original
    attention, whose 8 MiB temporaries faulted in at every switch, where
    ``torch.utils.benchmark`` in a fresh process measured 1.5×."""
    steady_allocator()
    sync = _synchronizer(use_cuda)
    floor_op = _floor_op()
    for _ in range(FLOOR_BATCH):
        floor_op()
    batches = [min(MAX_PAIR_BATCH, max(1, int(PAIR_SAMPLE_S / max(e, 1e-9)))) for e in estimates_s]
    samples: list[list[float]] = [[] for _ in invokes]
    floor_us: list[float] = []
    rounds = max(timing_calls, MAX_ROUNDS)
    clock = time.perf_counter
    deadline = clock() + timing_budget_s * len(invokes)
    done = 0
    order = list(range(len(invokes)))
    while done < rounds and (done < MIN_ROUNDS or clock() < deadline):
        for k in order if done % 2 == 0 else order[::-1]:
            invokes[k]()  # settle (see above)
            samples[k].append(_time_batch(invokes[k], batches[k], sync)[0])
        floor_us.append(_floor_batch(floor_op))
        done += 1
    while len(floor_us) < MIN_FLOOR_SAMPLES:
        floor_us.append(_floor_batch(floor_op))
    return samples, floor_us


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
        libc = glibc()
        if libc is None or not hasattr(libc, "mallopt"):
            return
        libc.malloc_trim(0)
        libc.mallopt(-3, GLIBC_MMAP_MAX)  # M_MMAP_THRESHOLD: glibc's own maximum for it
        libc.mallopt(-1, GLIBC_NO_TRIM)  # M_TRIM_THRESHOLD
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
