"""This machine's peaks: matmul FLOP/s per dtype and copy bandwidth, measured and cached.

A large square GEMM with all intra-op threads gives the matmul peak of a dtype; a large
``copy_`` (bytes read + bytes written per second) gives the memory bandwidth. A peak is the best
the machine can do, so each number is the fastest of up to ``MAX_REPS`` repetitions after a
warmup (all within ``BUDGET_S`` seconds together): on a shared machine other jobs only ever
slow a repetition down. Each is cached per (machine, torch version, device, dtype) in
``calibration.json`` under the cache folder (``$XDG_CACHE_HOME/torchscope`` or
``~/.cache/torchscope``, as ``host/trace_store.py`` places traces), with when it was measured
and the load average then, so only the first profile on a machine pays for it.

The cache corrects itself (``_stale``): an entry is measured again at the next profile when it
is older than ``MAX_AGE_S``, when it was measured while the 1-minute load average exceeded the
core count and the machine is calmer now (at most every ``RETRY_S``), or when it predates this
format (a bare number). A re-measurement keeps the higher of the old and new peak.
``torchscope calibrate`` measures again and replaces the entries
(``python -m torchscope.worker.calibrate --force`` in the target interpreter).
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any, Callable, Optional

from torchscope.protocol import (
    CALIBRATION_FILE,
    Peaks,
    Progress,
    cache_dir,
    cpu_name,
    from_builtins,
    machine_id,
)

BUDGET_S = 1.8
"""Whole calibration, all dtypes and the copy: under the 2 s the first profile may spend."""

CPU_GEMM_N = 1024
"""CPU GEMM size: 2·1024³ = 2.1 GFLOP, ~10-200 ms on one to a few cores, big enough for the
BLAS to reach its blocked steady state, small enough for three repetitions in the budget."""

CUDA_GEMM_N = 4096
COPY_BYTES = 64 << 20
"""Copy size: well past any last-level cache, so the copy measures DRAM bandwidth."""

MIN_REPS = 3
MAX_REPS = 25
MAX_AGE_S = 7 * 24 * 3600.0
"""A week: drivers, BIOS settings and thermal paste change; a peak is measured again then."""

AGED = "older than a week"

RETRY_S = 600.0
"""A peak measured under load is retried when the machine is calmer, at most this often (one
retry costs the whole calibration, < 2 s)."""

CACHE_FILE = CALIBRATION_FILE
DTYPES = ("float32", "float64", "float16", "bfloat16")
"""Dtypes the calibration knows how to measure (a GEMM in any other is left without a peak)."""


def device_label(device: str) -> str:
    """``cpu:2t`` (thread count matters on CPU) or ``cuda:NVIDIA H100 …`` (the current device:
    ``CUDA_VISIBLE_DEVICES`` chooses which)."""
    import torch

    if device == "cuda":
        return f"cuda:{torch.cuda.get_device_name()}"
    return f"cpu:{torch.get_num_threads()}t"


def torch_device_name(device: str) -> str:
    """The device's name as ``profile`` and ``analyze`` print it: the GPU's, or the CPU model
    (``protocol.cpu_name``)."""
    import torch

    return torch.cuda.get_device_name() if device == "cuda" else cpu_name()


def cache_key(device: str, dtype: str) -> str:
    import torch

    return f"{machine_id()}|torch {torch.__version__}|{device_label(device)}|{dtype}"


def _best_time(fn: Callable[[], Any], sync: Callable[[], None], deadline: float) -> float:
    """The fastest of ``MIN_REPS`` to ``MAX_REPS`` timed calls (as many as fit before
    ``deadline``)."""
    fn()  # warmup: first-touch pages, BLAS buffers, CUDA handles
    sync()
    times: list[float] = []
    while len(times) < MIN_REPS or (time.perf_counter() < deadline and len(times) < MAX_REPS):
        start = time.perf_counter()
        fn()
        sync()
        times.append(time.perf_counter() - start)
    return min(times)


def measure_matmul_gflops(device: str, dtype: str, deadline: float) -> Optional[float]:
    """GFLOP/s of one large square GEMM in ``dtype`` (None: the dtype has no GEMM here)."""
    import torch

    n = CUDA_GEMM_N if device == "cuda" else CPU_GEMM_N
    try:
        a = torch.randn(n, n, device=device).to(getattr(torch, dtype))
        b = torch.randn(n, n, device=device).to(getattr(torch, dtype))
        sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
        seconds = _best_time(lambda: torch.mm(a, b), sync, deadline)
    except (RuntimeError, TypeError, AttributeError):
        return None
    return 2.0 * n**3 / seconds / 1e9


def measure_bandwidth_gbps(device: str, deadline: float) -> float:
    """GB/s of a large ``copy_`` (read plus write)."""
    import torch

    src = torch.ones(COPY_BYTES // 4, device=device)
    dst = torch.empty_like(src)
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    seconds = _best_time(lambda: dst.copy_(src), sync, deadline)
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


def load_average() -> Optional[float]:
    """The 1-minute load average (None where the OS has none)."""
    try:
        return os.getloadavg()[0]
    except (OSError, AttributeError):
        return None


def _entry(value: float, load: Optional[float]) -> dict[str, Any]:
    return {"value": value, "at": time.time(), "load": load, "cores": os.cpu_count() or 1}


def _value(entry: Any) -> Optional[float]:
    if isinstance(entry, dict) and isinstance(entry.get("value"), (int, float)):
        return float(entry["value"])
    return None


def _stale(entry: Any, load_now: Optional[float], now: float) -> Optional[str]:
    """Why a cached entry must be measured again, or None when it still holds."""
    if _value(entry) is None:
        return "not measured yet" if entry is None else "cached by an older torchscope"
    at, load, cores = entry.get("at"), entry.get("load"), entry.get("cores")
    if not isinstance(at, (int, float)) or now - at > MAX_AGE_S:
        return AGED
    loaded = isinstance(load, (int, float)) and isinstance(cores, int) and load > cores
    if loaded and load_now is not None and load_now < load and now - at > RETRY_S:
        return f"measured under load ({load:.1f} on {cores} cores)"
    return None


def _measure(device: str, missing: list[str]) -> dict[str, float]:
    """Each of ``missing`` (dtypes, ``copy``) measured now, sharing ``BUDGET_S``."""
    deadline = time.perf_counter() + BUDGET_S
    out: dict[str, float] = {}
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
            out[d] = value
    return out


def peaks(
    device: str,
    dtypes: list[str],
    force: bool = False,
    on_calibrate: Optional[Callable[[str], None]] = None,
) -> dict[str, Any]:
    """``{"matmul_gflops": {dtype: GFLOP/s}, "bandwidth_gbps": GB/s, "source": "measured"}``
    for ``device`` (``cpu``/``cuda``), from the cache or measured now (``force``: always, and
    the new numbers replace the old; otherwise the higher of the two is kept).

    ``on_calibrate`` is told what is being measured and why, once, before anything is."""
    wanted = [d for d in dict.fromkeys(["float32", *dtypes]) if d in DTYPES]
    cache = _load()
    keys = {d: cache_key(device, d) for d in [*wanted, "copy"]}
    load_now, now = load_average(), time.time()
    why = {d: "forced" if force else _stale(cache.get(k), load_now, now) for d, k in keys.items()}
    missing = [d for d, reason in why.items() if reason is not None]
    if missing and on_calibrate is not None:
        reasons = ", ".join(dict.fromkeys(str(why[d]) for d in missing))
        on_calibrate(f"calibrating this machine's peaks ({', '.join(missing)}): {reasons}")
    for d, value in _measure(device, missing).items():
        old = cache.get(keys[d])
        kept = None if force or why[d] == AGED else _value(old)
        cache[keys[d]] = _entry(max(value, kept or 0.0), load_now)
    if missing:
        _save(cache)
    gflops = {d: v for d in wanted if (v := _value(cache.get(keys[d]))) is not None}
    return {
        "matmul_gflops": gflops,
        "bandwidth_gbps": _value(cache.get(keys["copy"])),
        "source": "measured",
        "device": device_label(device),
        "name": torch_device_name(device),
    }


def job_peaks(
    job_id: int, use_cuda: bool, dtypes: list[str], send: Callable[[Any], None]
) -> Optional[Peaks]:
    """A job's peaks for the dtypes its GEMMs used: measured the first time (the job reports a
    ``calibrate`` stage), from the cache after that (None: none known). A failure costs the
    efficiencies, not the job."""

    def say(message: str) -> None:
        send(Progress(job_id, "calibrate", message, 0.95))

    try:
        found = peaks("cuda" if use_cuda else "cpu", dtypes, on_calibrate=say)
        return from_builtins(Peaks, found) if found.get("matmul_gflops") else None
    except Exception:  # an odd build (no BLAS, no copy) must not fail jobs
        return None


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
