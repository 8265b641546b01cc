"""This machine's peaks: matmul FLOP/s per dtype and copy bandwidth, measured and cached.

A large square GEMM with all intra-op threads gives the matmul peak of a dtype; a large
``copy_`` (bytes read + bytes written per second) gives the memory bandwidth. Each number is
the median of a few repetitions after a warmup, all within ``BUDGET_S`` seconds together, and
is cached per (machine, torch version, device, dtype) in ``calibration.json`` under the cache
folder (``$XDG_CACHE_HOME/torchscope`` or ``~/.cache/torchscope``, as ``host/trace_store.py``
places traces), so only the first profile on a machine pays for it. ``torchscope calibrate``
measures again (``python -m torchscope.worker.calibrate --force`` in the target interpreter).
"""

from __future__ import annotations

import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Callable, Optional

from torchscope.protocol import Progress

BUDGET_S = 1.8
"""Whole calibration, all dtypes and the copy: under the 2 s the first profile may spend."""

CPU_GEMM_N = 1024
"""CPU GEMM size: 2·1024³ = 2.1 GFLOP, ~10-200 ms on one to a few cores, big enough for the
BLAS to reach its blocked steady state, small enough for three repetitions in the budget."""

CUDA_GEMM_N = 4096
COPY_BYTES = 64 << 20
"""Copy size: well past any last-level cache, so the copy measures DRAM bandwidth."""

MIN_REPS = 3
CACHE_FILE = "calibration.json"
DTYPES = ("float32", "float64", "float16", "bfloat16")
"""Dtypes the calibration knows how to measure (a GEMM in any other is left without a peak)."""


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "torchscope"


def _machine() -> str:
    name = platform.node() or "host"
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as info:
            for line in info:
                if line.startswith("model name"):
                    return f"{name}/{line.split(':', 1)[1].strip()}"
    except OSError:
        pass
    return f"{name}/{platform.machine()}"


def device_label(device: str) -> str:
    """``cpu:2t`` (thread count matters on CPU) or ``cuda:NVIDIA H100 …``."""
    import torch

    if device == "cuda":
        return f"cuda:{torch.cuda.get_device_name(0)}"
    return f"cpu:{torch.get_num_threads()}t"


def cache_key(device: str, dtype: str) -> str:
    import torch

    return f"{_machine()}|torch {torch.__version__}|{device_label(device)}|{dtype}"


def _median_time(fn: Callable[[], Any], sync: Callable[[], None], deadline: float) -> float:
    fn()  # warmup: first-touch pages, BLAS buffers, CUDA handles
    sync()
    times: list[float] = []
    while len(times) < MIN_REPS or (time.perf_counter() < deadline and len(times) < 9):
        start = time.perf_counter()
        fn()
        sync()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def measure_matmul_gflops(device: str, dtype: str, deadline: float) -> Optional[float]:
    """GFLOP/s of one large square GEMM in ``dtype`` (None: the dtype has no GEMM here)."""
    import torch

    n = CUDA_GEMM_N if device == "cuda" else CPU_GEMM_N
    try:
        a = torch.randn(n, n, device=device).to(getattr(torch, dtype))
        b = torch.randn(n, n, device=device).to(getattr(torch, dtype))
        sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
        seconds = _median_time(lambda: torch.mm(a, b), sync, deadline)
    except (RuntimeError, TypeError, AttributeError):
        return None
    return 2.0 * n**3 / seconds / 1e9


def measure_bandwidth_gbps(device: str, deadline: float) -> float:
    """GB/s of a large ``copy_`` (read plus write)."""
    import torch

    src = torch.ones(COPY_BYTES // 4, device=device)
    dst = torch.empty_like(src)
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    seconds = _median_time(lambda: dst.copy_(src), sync, deadline)
    return 2.0 * COPY_BYTES / seconds / 1e9


def _load() -> dict[str, Any]:
    try:
        with open(cache_dir() / CACHE_FILE, encoding="utf-8") as f:
            data = json.load(f)
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


def _save(data: dict[str, Any]) -> None:
    folder = cache_dir()
    try:
        folder.mkdir(parents=True, exist_ok=True)
        tmp = folder / f"{CACHE_FILE}.{os.getpid()}.tmp"
        tmp.write_text(json.dumps(data, indent=1, sort_keys=True), encoding="utf-8")
        os.replace(tmp, folder / CACHE_FILE)
    except OSError:
        pass  # a read-only home: measure again next time rather than fail the profile


def peaks(
    device: str,
    dtypes: list[str],
    force: bool = False,
    on_calibrate: Optional[Callable[[str], None]] = None,
) -> dict[str, Any]:
    """``{"matmul_gflops": {dtype: GFLOP/s}, "bandwidth_gbps": GB/s, "source": "measured"}``
    for ``device`` (``cpu``/``cuda``), from the cache or measured now (``force``: always).

    ``on_calibrate`` is told what is being measured, once, before anything is measured."""
    wanted = [d for d in dict.fromkeys(["float32", *dtypes]) if d in DTYPES]
    cache = _load()
    keys = {d: cache_key(device, d) for d in [*wanted, "copy"]}
    missing = [d for d, k in keys.items() if force or not isinstance(cache.get(k), (int, float))]
    if missing and on_calibrate is not None:
        on_calibrate(f"calibrating this machine's peaks ({', '.join(missing)}), once per machine")
    deadline = time.perf_counter() + BUDGET_S
    for i, d in enumerate(missing):
        # Share what is left of the budget among the measurements still to make.
        share = (deadline - time.perf_counter()) / (len(missing) - i)
        until = time.perf_counter() + max(0.0, share)
        value = (
            measure_bandwidth_gbps(device, until)
            if d == "copy"
            else measure_matmul_gflops(device, d, until)
        )
        if value is not None:
            cache[keys[d]] = value
    if missing:
        _save(cache)
    gflops = {
        d: float(cache[keys[d]]) for d in wanted if isinstance(cache.get(keys[d]), (int, float))
    }
    bandwidth = cache.get(keys["copy"])
    return {
        "matmul_gflops": gflops,
        "bandwidth_gbps": float(bandwidth) if isinstance(bandwidth, (int, float)) else None,
        "source": "measured",
        "device": device_label(device),
    }


def job_peaks(
    job_id: int, use_cuda: bool, dtypes: list[str], send: Callable[[Any], None]
) -> dict[str, Any]:
    """A job's peaks for the dtypes its GEMMs used: measured the first time (the job reports a
    ``calibrate`` stage), from the cache after that. A failure costs the efficiencies, not the
    job."""

    def say(message: str) -> None:
        send(Progress(job_id, "calibrate", message, 0.95))

    try:
        return peaks("cuda" if use_cuda else "cpu", dtypes, on_calibrate=say)
    except Exception:  # an odd build (no BLAS, no copy) must not fail jobs
        return {}


def main(argv: list[str]) -> int:
    """``python -m torchscope.worker.calibrate [--force] [--device cpu|cuda] [dtype …]``:
    prints the peaks as one JSON object."""
    import torch

    force = "--force" in argv
    args = [a for a in argv if a != "--force"]
    device = "cpu"
    if "--device" in args:
        at = args.index("--device")
        device = args[at + 1] if at + 1 < len(args) else "cpu"
        del args[at : at + 2]
    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    print(json.dumps(peaks(device, args, force=force)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
