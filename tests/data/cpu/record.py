"""Re-record the CPU traces and measurements the unit tier analyses (``cpu_traces`` in
``tests/unit/conftest.py``): the guide's function at 8×8 and 512×512, profiled the way
torchscope's worker profiles (``schedule(wait=0, warmup=1, active=K, repeat=1)``,
``prof.step()`` per call, ``record_shapes=True``, a ``torchscope:L12`` marker around each
call), and timed without the profiler like its timing pass.

The files are committed so the unit tests see fixed data; re-record only when the profiler's
output format changes (a new torch), and check the unit tier still passes:

    .venv/bin/python tests/data/cpu/record.py
"""

from __future__ import annotations

import json
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from torch.profiler import ProfilerActivity, profile, record_function, schedule

HERE = Path(__file__).resolve().parent


def profile_to(
    path: Path,
    fn: Callable[..., Any],
    args: tuple[Any, ...],
    *,
    active: int = 5,
    markers: bool | str = True,
) -> Path:
    """Profile ``fn(*args)`` like the worker's profile pass and export to ``path``.

    ``markers``: True wraps each call in ``record_function("torchscope:L12")`` (category
    ``user_annotation``); ``"fast"`` uses ``_RecordFunctionFast`` like the worker does on
    torch ≥ 2.2 (recorded as ``cpu_op``); False records no marker.
    """
    mark: Any = record_function
    if markers == "fast":
        mark = torch._C._profiler._RecordFunctionFast

    with profile(
        activities=[ProfilerActivity.CPU],
        record_shapes=True,
        schedule=schedule(wait=0, warmup=1, active=active, repeat=1),
    ) as prof:
        for _ in range(active + 1):
            if markers:
                with mark("torchscope:L12"):
                    fn(*args)
            else:
                fn(*args)
            prof.step()
    prof.export_chrome_trace(str(path))
    return path


def measure(fn: Callable[..., Any], args: tuple[Any, ...], calls: int = 50) -> dict[str, Any]:
    """Unprofiled timing like the worker's timing pass (cold call, steady calls, floor)."""
    t0 = time.perf_counter()
    fn(*args)
    cold = (time.perf_counter() - t0) * 1e6
    for _ in range(3):
        fn(*args)
    call_us = []
    for _ in range(calls):
        t0 = time.perf_counter()
        fn(*args)
        call_us.append((time.perf_counter() - t0) * 1e6)
    one = torch.ones(1)
    floor = []
    for _ in range(200):
        t0 = time.perf_counter()
        torch.add(one, one)
        floor.append((time.perf_counter() - t0) * 1e6)
    return {"cold_us": cold, "call_us": call_us, "dispatch_floor_us": statistics.median(floor)}


def guide_fn(x: Any, w: Any, b: Any) -> Any:
    """The guide's function: one matmul and one add, two top-level ops per call."""
    return torch.add(torch.matmul(x, w), b)


def main() -> None:
    torch.manual_seed(0)
    for n in (8, 512):
        args = (torch.randn(n, n), torch.randn(n, n), torch.randn(n))
        profile_to(HERE / f"fn{n}.json.gz", guide_fn, args)
        measured = measure(guide_fn, args, calls=50 if n == 8 else 10)
        (HERE / f"fn{n}_measured.json").write_text(json.dumps(measured, indent=1) + "\n")
    small = (torch.randn(8, 8), torch.randn(8, 8), torch.randn(8))
    profile_to(HERE / "fn8_fast.json.gz", guide_fn, small, markers="fast")
    profile_to(HERE / "fn8_plain.json", guide_fn, small, markers=False)
    for path in sorted(HERE.glob("fn*")):
        print(path.name, path.stat().st_size, "bytes")


if __name__ == "__main__":
    main()
