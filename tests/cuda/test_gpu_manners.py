"""Good manners on a shared GPU box (issue 53), on a real GPU: the worker makes no CUDA context
until a job asks for CUDA, a CPU job never makes one, the GPU's calibration runs on the first
CUDA job and is cached, and ``CUDA_VISIBLE_DEVICES`` given to the worker chooses its GPU.

The user's code reports ``torch.cuda.is_initialized()`` from inside the worker
(tests/fixtures/workspace/env_probe.py, through ``TORCHSCOPE_PROBE_OUT``).
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import pytest
import torch

from tests.conftest import EXAMPLES, FIXTURES
from torchscope.host.profile_run import PROFILE, ProfileOutcome, Profiler
from torchscope.host.trace_store import TraceStore
from torchscope.protocol import JobOptions
from torchscope.source.targets import Target, function_named, read_source
from torchscope.worker import calibrate

pytestmark = pytest.mark.cuda

PROBE = FIXTURES / "env_probe.py"
MATMUL = EXAMPLES / "matmul_add.py"
CUDA_CALL = 'fn(*(torch.randn(256, 256, device="cuda") for _ in range(3)))'
OPTIONS = JobOptions(steps=2, warmup=1, timing_budget_s=0.3)


def test_no_cuda_context_until_a_cuda_job_and_one_calibration(tmp_path: Path) -> None:
    out = tmp_path / "seen.json"
    cache = tmp_path / "cache"
    env = {
        "TORCHSCOPE_PROBE_OUT": str(out),
        "XDG_CACHE_HOME": str(cache),
        "CUDA_VISIBLE_DEVICES": "0",
    }
    probe = function_named(read_source(PROBE), str(PROBE), "env_probe")
    matmul = function_named(read_source(MATMUL), str(MATMUL), "fn")
    said: list[list[str]] = []

    async def job(target: Target, call: str) -> ProfileOutcome:
        said.append([])
        return await profiler.run_job(
            PROFILE, target, call, OPTIONS, lambda m: said[-1].append(f"{m.stage}: {m.message}")
        )

    async def go() -> list[bool]:
        assert await profiler.warm()
        hello = await profiler.hello()
        seen = []
        for _ in range(2):  # the second sees what the first left behind (its calibration too)
            outcome = await job(probe, "env_probe(torch.ones(4))")
            assert outcome.report.device.kind == "cpu"
            seen.append(json.loads(out.read_text())["cuda_initialized"])
        for _ in range(2):
            outcome = await job(matmul, CUDA_CALL)
            assert outcome.report.device.kind == "cuda"
        assert hello.cuda_available and len(hello.device_names) == 1  # CUDA_VISIBLE_DEVICES=0
        assert hello.device_names[0] == torch.cuda.get_device_name(0), hello.device_names
        return seen

    profiler = Profiler(sys.executable, TraceStore(tmp_path / "traces"), env=env)

    async def run() -> list[bool]:
        try:
            return await go()
        finally:
            await profiler.close()

    assert asyncio.run(run()) == [False, False]  # no CUDA context in the CPU jobs
    calibrated = [any(s.startswith("calibrate: calibrating") for s in job) for job in said]
    assert calibrated == [True, False, True, False], said  # CPU once, then the GPU once
    keys = json.loads((cache / "torchscope" / calibrate.CACHE_FILE).read_text())
    assert any(f"|cuda:{torch.cuda.get_device_name(0)}|" in key for key in keys), keys
