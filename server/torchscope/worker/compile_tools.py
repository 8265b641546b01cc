"""What a compile comparison needs from torch beyond a profile (the interleaved timing is
``ab_rounds.py``'s): a steady allocator, Dynamo's counters and the code Inductor generated
(``worker/jobs/compare.py`` runs the passes). Only torch >= 2.1 APIs are used, each private
one guarded.
"""

from __future__ import annotations

import gc
import os
from collections.abc import Iterable
from typing import Any, Optional

from torchscope.protocol import GLIBC_MMAP_MAX
from torchscope.worker.heap_state import glibc

REASON_CHARS = 800
"""A graph-break reason is cut here (Dynamo's come with hints and a link)."""


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
