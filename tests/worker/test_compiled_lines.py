"""Per-line times inside ``torch.compile`` (issue 42), on the CPU with the real worker, torch and
Inductor: each compiled kernel's time goes to the lines Inductor's provenance names.

``head`` (tests/fixtures/workspace/compile_samples.py) is four lines — matmul, relu, scale,
sum: Inductor keeps the mm an extern call (``aten::mm`` in the trace) and fuses the other three
into one C++ kernel (``graph_<n>_cpp_fused_mul_relu_sum_0``). ``breaks`` has a graph break
(``print``) between two identical ``torch.mm`` graphs.
"""

from __future__ import annotations

import asyncio
import gzip
import json
import re
import sys
from collections.abc import Iterator

import pytest

from tests.conftest import FIXTURES, REPO
from torchscope.host.compare_run import COMPARE, CompareOutcome
from torchscope.host.profile_run import Profiler
from torchscope.host.trace_store import TraceStore
from torchscope.protocol import JobOptions, to_builtins
from torchscope.report.compare import render_comparison
from torchscope.source.targets import function_named, read_source

pytestmark = pytest.mark.slow

SAMPLES = FIXTURES / "compile_samples.py"


def line_of(text: str) -> int:
    [index] = [i for i, line in enumerate(SAMPLES.read_text().splitlines()) if text in line]
    return index + 1


@pytest.fixture(scope="module")
def compared(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, CompareOutcome]]:
    cache = tmp_path_factory.mktemp("inductor")
    traces = tmp_path_factory.mktemp("compiled-lines-traces")
    source = read_source(SAMPLES)

    async def go() -> dict[str, CompareOutcome]:
        profiler = Profiler(sys.executable, TraceStore(traces))
        options = JobOptions(steps=3, warmup=2, timeout_s=300, workspace_root=str(REPO))
        try:
            return {
                name: await profiler.run_job(
                    COMPARE, function_named(source, str(SAMPLES), name), None, options
                )
                for name in ("head", "breaks")
            }
        finally:
            await profiler.close()

    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("OMP_NUM_THREADS", "1")
        patch.setenv("TORCHINDUCTOR_CACHE_DIR", str(cache))
        yield asyncio.run(go())


def recomputed_shares(trace_path: str) -> dict[str, float]:
    """From the trace's events alone: each kernel's share of the kernels' time (the fused C++
    kernel by its profiled name, the extern mm as the ``aten::mm`` events)."""
    with gzip.open(trace_path, "rt") as f:
        events = json.load(f)["traceEvents"]
    totals: dict[str, float] = {}
    for event in events:
        name = str(event.get("name", ""))
        if event.get("ph") == "X" and (re.match(r"graph_\d+_cpp_", name) or name == "aten::mm"):
            key = "mm" if name == "aten::mm" else "fused"
            totals[key] = totals.get(key, 0.0) + float(event["dur"])
    total = sum(totals.values())
    return {k: v / total for k, v in totals.items()}


def test_each_line_s_compiled_share_matches_the_trace_s_kernel_events(
    compared: dict[str, CompareOutcome],
) -> None:
    outcome = compared["head"]
    lines = outcome.compare.lines
    assert lines is not None and not lines.note, lines
    assert outcome.compare.compiled is not None and outcome.compare.compiled.trace_path
    expected = recomputed_shares(outcome.compare.compiled.trace_path)
    matmul, relu, scale, total = (
        line_of("y = x @ w"),
        line_of("y = torch.relu(y)"),
        line_of("y = y * 2.0"),
        line_of("return y.sum()"),
    )
    by_line = {line.line: line for line in lines.lines}
    assert set(by_line) == {matmul, relu, scale, total}
    assert by_line[matmul].share == pytest.approx(expected["mm"], rel=0.10)
    for fused in (relu, scale, total):  # one group on each of its lines
        assert by_line[fused].share == pytest.approx(expected["fused"], rel=0.10)
    assert sum(k.us for k in lines.kernels) == pytest.approx(lines.total_us)  # counted once


def test_the_fused_kernel_names_its_lines_and_the_mm_keeps_its_own(
    compared: dict[str, CompareOutcome],
) -> None:
    lines = compared["head"].compare.lines
    assert lines is not None
    matmul, relu, scale, total = (
        line_of("y = x @ w"),
        line_of("y = torch.relu(y)"),
        line_of("y = y * 2.0"),
        line_of("return y.sum()"),
    )
    [fused] = [k for k in lines.kernels if "cpp_fused" in k.name]
    assert fused.lines == [relu, scale, total]
    assert set(fused.ops) == {"relu", "mul", "sum"}
    [mm] = [k for k in lines.kernels if k.name == "aten::mm"]
    assert mm.lines == [matmul] and mm.extern
    by_line = {line.line: line for line in lines.lines}
    assert by_line[relu].fused_with == [scale, total]
    assert by_line[matmul].fused_with == []
    text = render_comparison(compared["head"].compare)
    assert f"line {relu}: eager " in text and f"(fused with lines {scale}–{total}: " in text
    assert f"line {matmul}: eager " in text and "an extern kernel" in text


def test_json_lines_carry_compiled_us_and_fused_with(compared: dict[str, CompareOutcome]) -> None:
    data = to_builtins(compared["head"])
    relu = line_of("y = torch.relu(y)")
    [entry] = [e for e in data["lines"] if e["line"] == relu]
    assert entry["compiled_us"] > 0
    assert entry["fused_with"] == [relu + 1, relu + 2]
    kernels = data["compare"]["compiled"]["kernels"]
    assert {tuple(k["lines"]) for k in kernels} == {(relu - 1,), (relu, relu + 1, relu + 2)}


def test_a_graph_break_is_on_its_line_and_each_side_keeps_its_mm(
    compared: dict[str, CompareOutcome],
) -> None:
    lines = compared["breaks"].compare.lines
    assert lines is not None
    broke = line_of('print("graph break here")')
    by_line = {line.line: line for line in lines.lines}
    reason = by_line[broke].graph_break
    assert reason is not None and "print" in reason  # Dynamo's words
    # two identical graphs (one cache key) either side of the break: told apart by graph id
    first, second = line_of("y = torch.mm(x, w)"), line_of("return torch.mm(y, w)")
    assert sorted(k.lines[0] for k in lines.kernels if k.name == "aten::mm") == [first, second]
    assert f"line {broke}: eager " in render_comparison(compared["breaks"].compare)
    assert "graph break here" in render_comparison(compared["breaks"].compare)
