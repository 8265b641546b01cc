"""The guide's pattern on a GPU: overhead-bound at 64×64, compute-bound at 4096×4096.

The headline's CPU number per call comes from the unprofiled timing pass (synchronised), and
the device time from the trace.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest

from tests.conftest import EXAMPLES
from torchscope.host.profile_run import PROFILE, ProfileOutcome, Profiler
from torchscope.host.trace_store import TraceStore
from torchscope.protocol import JobOptions, to_builtins
from torchscope.source.targets import function_named, read_source

pytestmark = pytest.mark.cuda

CALL = 'fn(torch.randn({n}, {n}, device="cuda"), torch.randn({n}, {n}, device="cuda"), torch.randn({n}, {n}, device="cuda"))'


def profile_fn(n: int, trace_dir: Path) -> ProfileOutcome:
    path = EXAMPLES / "matmul_add.py"
    target = function_named(read_source(path), str(path), "fn")

    async def go() -> ProfileOutcome:
        profiler = Profiler(sys.executable, TraceStore(trace_dir))
        try:
            return await profiler.run_job(PROFILE, target, CALL.format(n=n), JobOptions())
        finally:
            await profiler.close()

    return asyncio.run(go())


def test_64_is_overhead_bound_with_unprofiled_cpu_time(trace_dir: Path) -> None:
    report = to_builtins(profile_fn(64, trace_dir))
    verdict = report["verdict"]
    assert report["device"]["kind"] == "cuda"
    assert verdict["id"] == "overhead-bound", verdict
    assert verdict["cpu_us"] == pytest.approx(report["timing"]["median_us"])
    assert 0 < verdict["device_us"] < verdict["cpu_us"]
    assert "GPU" in verdict["headline"]


def test_4096_is_compute_bound(trace_dir: Path) -> None:
    report = to_builtins(profile_fn(4096, trace_dir))
    verdict = report["verdict"]
    assert verdict["id"] == "compute-bound", verdict
    assert verdict["device_us"] > 1000
    # The GEMM outlives the CPU's launch (~50 µs): the headline's step and the stability
    # check take the step's span, not the CPU's wall (an H200 read "2.7 ms of 53 µs" and
    # "unstable: the profiled steps ran faster than the unprofiled calls").
    assert verdict["stable"], verdict["unstable_reason"]
    _busy, of = verdict["headline"].split("(")[1].rstrip(")").split(" of ")
    assert not of.endswith("µs"), verdict["headline"]
    assert report["profiler_overhead_us"] is None or report["profiler_overhead_us"] >= 0
