"""Per-line times inside ``torch.compile`` on a GPU (issue 42): the Triton kernels go through
the same mapping as the CPU's C++ kernels (``analysis/multi/compiled_lines.py``) — the fused
kernel(s) name the lines of ``relu``, the scale and the ``sum``; the mm keeps its own line."""

from __future__ import annotations

import asyncio
import sys

import pytest

from tests.conftest import FIXTURES
from torchscope.host.compare_run import COMPARE, CompareOutcome
from torchscope.host.profile_run import Profiler
from torchscope.host.trace_store import TraceStore
from torchscope.protocol import JobOptions
from torchscope.source.targets import function_named, read_source

pytestmark = [pytest.mark.cuda, pytest.mark.slow]

SAMPLES = FIXTURES / "compile_samples.py"
CALL = 'head(torch.randn(1024, 1024, device="cuda"), torch.randn(1024, 1024, device="cuda"))'


def line_of(text: str) -> int:
    [index] = [i for i, line in enumerate(SAMPLES.read_text().splitlines()) if text in line]
    return index + 1


@pytest.fixture(scope="module")
def compared(tmp_path_factory: pytest.TempPathFactory) -> CompareOutcome:
    target = function_named(read_source(SAMPLES), str(SAMPLES), "head")
    traces = tmp_path_factory.mktemp("cuda-compiled-lines")

    async def go() -> CompareOutcome:
        profiler = Profiler(sys.executable, TraceStore(traces))
        try:
            return await profiler.run_job(COMPARE, target, CALL, JobOptions(timeout_s=600))
        finally:
            await profiler.close()

    return asyncio.run(go())


def test_triton_kernels_are_on_the_lines_they_fused(compared: CompareOutcome) -> None:
    lines = compared.compare.lines
    assert lines is not None and not lines.note, lines
    fused = {line_of("y = torch.relu(y)"), line_of("y = y * 2.0"), line_of("return y.sum()")}
    triton = [k for k in lines.kernels if k.name.startswith("triton_")]
    assert triton and all(set(k.lines) <= fused for k in triton), lines.kernels
    assert any(len(k.lines) > 1 for k in triton)  # at least one kernel fused lines
    assert all(k.us > 0 for k in triton)
    extern = [k for k in lines.kernels if k.extern]
    assert [k.lines for k in extern] == [[line_of("y = x @ w")]]
