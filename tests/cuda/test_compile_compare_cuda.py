"""The guide's torch.compile case on a GPU: at 4096×4096 the compiled ``fn`` dispatches
``aten::addmm`` instead of ``aten::mm`` + ``aten::add``, keeps the same GEMM, and first copies
the bias into the output with a ``Memcpy DtoD`` — before the GEMM runs, in every step."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import EXAMPLES
from torchscope.analysis import load_trace
from torchscope.analysis.index.context import build_context
from torchscope.analysis.measure.launch import launch_steps
from torchscope.host.compare_run import COMPARE
from torchscope.host.profile_run import Profiler
from torchscope.host.trace_store import TraceStore
from torchscope.protocol import JobOptions, to_builtins
from torchscope.source.targets import function_named, read_source

pytestmark = [pytest.mark.cuda, pytest.mark.slow]

N = 4096
CALL = (
    f'fn(torch.randn({N}, {N}, device="cuda"), torch.randn({N}, {N}, device="cuda"), '
    f'torch.randn({N}, {N}, device="cuda"))'
)


@pytest.fixture(scope="module")
def compared(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    path = EXAMPLES / "matmul_add.py"
    target = function_named(read_source(path), str(path), "fn")
    traces = tmp_path_factory.mktemp("cuda-compare")

    async def go() -> dict[str, Any]:
        profiler = Profiler(sys.executable, TraceStore(traces))
        try:
            outcome = await profiler.run_job(COMPARE, target, CALL, JobOptions(timeout_s=600))
            return to_builtins(outcome.compare)
        finally:
            await profiler.close()

    return asyncio.run(go())


def test_compiled_adds_a_dtod_bias_copy(compared: dict[str, Any]) -> None:
    assert compared["compiled"] is not None, compared["error"]
    names = {op["name"] for op in compared["compiled"]["ops"]}
    assert "aten::addmm" in names and "aten::mm" not in names
    copies = [c for c in compared["compiled"]["copies"] if c["kind"] == "DtoD"]
    assert copies, compared["compiled"]["copies"]
    assert copies[0]["within"] == "aten::addmm"
    assert copies[0]["bytes"] == N * N * 4
    assert not [c for c in compared["eager"]["copies"] if c["kind"] == "DtoD"]
    assert any(f["rule"] == "compile-copy" for f in compared["findings"])
    assert compared["verdict"]["id"] in ("keep-eager", "compile-wins", "no-difference", "inconclusive")
    assert compared["compiled"]["device_us"] > 0 and compared["compiled"]["launches"] >= 1


def launched_by(ctx: Any, kernel: int) -> str:
    runtime = ctx.links.kernel_rt[kernel]
    op = ctx.nest.rt_op[runtime] if runtime >= 0 else -1
    return str(ctx.trace.ops[op].name) if op >= 0 else ""


def test_the_dtod_copy_runs_before_the_gemm_in_every_step(compared: dict[str, Any]) -> None:
    trace = load_trace(compared["compiled"]["trace_path"])
    ctx = build_context(trace, None)
    assert ctx.steps
    # By the step that launched them: the device runs its GEMMs steps behind the CPU (an
    # H200 ran no kernel inside its own step), so a step's time window holds none of them.
    copy_step = launch_steps(ctx, trace.memcpys, "memcpy")
    kernel_step = launch_steps(ctx, trace.kernels, "kernel")
    for k in range(len(ctx.steps)):
        copies = [
            m.start for i, m in enumerate(trace.memcpys) if copy_step[i] == k and "DtoD" in m.name
        ]
        gemms = [  # the kernels aten::addmm launched (cuBLAS names vary: *gemm*, nvjet_*…)
            kernel.start
            for i, kernel in enumerate(trace.kernels)
            if kernel_step[i] == k and launched_by(ctx, i) == "aten::addmm"
        ]
        assert copies and gemms, (k, copies, gemms)
        assert min(copies) < min(gemms)


def test_the_eager_side_is_still_a_full_profile(compared: dict[str, Any]) -> None:
    assert Path(compared["eager"]["trace_path"]).is_file()
    assert compared["eager"]["verdict"]["id"] == "compute-bound"
