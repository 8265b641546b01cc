"""The profiled pass: ``torch.profiler`` over K calls, one ``ProfilerStep#N`` per call.

``schedule(wait=0, warmup=1, active=K, repeat=1)``: one extra call warms the profiler up and is
discarded; ``repeat=1`` matters, with ``repeat=0`` the events of a finished cycle are cleared.
The trace is exported as Chrome-trace JSON (gzip when the path ends in ``.gz``); the analysis
reads that file, never live profiler objects, so a trace from any machine reads the same. Its
top-level ``traceName`` (Kineto writes the export path there) says which function and when.
"""

from __future__ import annotations

import contextlib
import errno
import gzip
import json
import os
import shutil
import warnings
from collections.abc import Iterator
from typing import Any, Callable, Optional

from torchscope.files import NO_SPACE, atomic_file, no_space


def _name_trace(json_path: str, trace_name: str) -> None:
    """Replace the ``"traceName": "<path>"`` Kineto writes at the end of the file, in place."""
    with open(json_path, "r+b") as f:
        size = f.seek(0, os.SEEK_END)
        start = max(0, size - 8192)
        f.seek(start)
        tail = f.read().decode("utf-8", errors="surrogateescape")
        key = tail.rfind('"traceName":')
        if key < 0:
            return  # another layout: leave the file as torch wrote it
        value = key + len('"traceName":')
        value += len(tail[value:]) - len(tail[value:].lstrip())
        try:
            _, end = json.JSONDecoder().raw_decode(tail, value)
        except ValueError:
            return
        patched = tail[:value] + json.dumps(trace_name) + tail[end:]
        f.seek(start)
        f.truncate()
        f.write(patched.encode("utf-8", errors="surrogateescape"))


class TraceWriteError(Exception):
    """The trace could not be written whole (a full disk, a quota, ``ulimit -f``): the message
    says where and what to do; nothing partial is left in the store."""


def export_trace(prof: Any, trace_path: str, trace_name: Optional[str]) -> None:
    """Chrome-trace JSON at ``trace_path`` (gzipped for ``.gz``), named ``trace_name``: written
    whole or not at all (Kineto writes a ``.partial`` beside it, gzipped into a temporary
    file that is ``fsync``-ed and renamed; ``files.atomic_file``), readable by its owner only."""
    os.makedirs(os.path.dirname(os.path.abspath(trace_path)), exist_ok=True)
    plain = trace_path + ".partial"
    try:
        prof.export_chrome_trace(plain)
        if not _complete(plain):  # Kineto's writer reports no short write: it leaves a .tmp
            raise TraceWriteError(no_space(trace_path, _CUT_SHORT, hint=_WHERE_HINT))
        if trace_name:
            _name_trace(plain, trace_name)
        with open(plain, "rb") as fin, atomic_file(trace_path) as out:
            if trace_path.endswith(".gz"):
                with gzip.GzipFile(fileobj=out, mode="wb", compresslevel=6) as fout:
                    shutil.copyfileobj(fin, fout, 1 << 20)
            else:
                shutil.copyfileobj(fin, out, 1 << 20)
    except OSError as exc:
        if exc.errno not in NO_SPACE:
            raise
        raise TraceWriteError(no_space(trace_path, exc, hint=_WHERE_HINT)) from None
    finally:
        for left in (plain, plain + ".tmp"):  # Kineto writes <plain>.tmp, then renames it
            with contextlib.suppress(OSError):
                os.remove(left)


_WHERE_HINT = "set --trace-dir"
_CUT_SHORT = OSError(errno.ENOSPC, "the profiler's trace was cut short")


def _complete(path: str) -> bool:
    """Whether Kineto wrote the JSON whole: there, and ending as a document does."""
    if not os.path.exists(path):
        return False
    with open(path, "rb") as f:
        size = f.seek(0, os.SEEK_END)
        f.seek(max(0, size - 64))
        return f.read().rstrip().endswith((b"}", b"]"))


@contextlib.contextmanager
def quiet_profiler() -> Iterator[None]:
    """torch 2.11 warns, as a profiler starts, that a cycle clears its events (``acc_events``):
    each of ours is one cycle, so nothing is lost, and the user has nothing to do about it."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Warning: Profiler clears events")
        yield


def profile_calls(
    invoke: Callable[[], Any],
    steps: int,
    use_cuda: bool,
    trace_path: str,
    trace_name: Optional[str] = None,
    with_stack: bool = False,
    profile_memory: bool = False,
) -> list[str]:
    """Profile ``steps`` calls into ``trace_path``; returns the dtypes its GEMMs ran in (what
    the calibration measures peaks for)."""
    import torch
    from torch.profiler import ProfilerActivity, profile, schedule

    activities = [ProfilerActivity.CPU]
    if use_cuda:
        activities.append(ProfilerActivity.CUDA)
    prof = profile(
        activities=activities,
        record_shapes=True,
        with_flops=True,
        with_stack=with_stack,
        profile_memory=profile_memory,
        schedule=schedule(wait=0, warmup=1, active=steps, repeat=1),
    )
    with quiet_profiler(), prof:
        for _ in range(steps + 1):
            invoke()
            prof.step()
    if use_cuda:
        torch.cuda.synchronize()
    export_trace(prof, trace_path, trace_name)
    return gemm_dtypes(prof)


#: ``Input type`` strings of the dtypes the calibration can measure.
_DTYPE_NAMES = {
    "float": "float32",
    "double": "float64",
    "c10::Half": "float16",
    "c10::BFloat16": "bfloat16",
}
_GEMMS = frozenset({"aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm", "aten::convolution"})


def gemm_dtypes(prof: Any) -> list[str]:
    """Dtypes of the profiled GEMMs' first operand (empty when the profiler cannot say)."""
    found: set[str] = set()
    try:
        for event in prof.profiler.kineto_results.events():
            if event.name() in _GEMMS:
                types = event.dtypes()
                operand = types[1] if event.name() in ("aten::addmm", "aten::baddbmm") else types[0]
                if operand in _DTYPE_NAMES:
                    found.add(_DTYPE_NAMES[operand])
    except (AttributeError, IndexError, RuntimeError):
        pass  # another torch: calibrate float32 only
    return sorted(found)
