"""Per-line attribution on real torch (CPU): the line-marked copy and the analysis of its trace."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import EXAMPLES
from torchscope.host.profile_run import PROFILE, Profiler
from torchscope.host.trace_store import TraceStore
from torchscope.protocol import JobOptions, to_builtins
from torchscope.source.targets import function_named, read_source

LINES = EXAMPLES / "lines.py"
FUNCTIONS = ("hot_and_cold", "loop", "early_return", "closure_and_generator", "calls_helper")


def line_of(text: str) -> int:
    """1-based line of the first source line containing ``text``."""
    for number, line in enumerate(LINES.read_text().splitlines(), start=1):
        if text in line:
            return number
    raise AssertionError(text)


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    """Profile every example function once, in one worker (torch is imported once)."""
    source = read_source(LINES)
    store = TraceStore(tmp_path_factory.mktemp("lines-traces"))

    async def go() -> dict[str, dict[str, Any]]:
        profiler = Profiler(sys.executable, store, cwd=str(EXAMPLES))
        try:
            out = {}
            for name in FUNCTIONS:
                target = function_named(source, str(LINES), name)
                outcome = await profiler.run_job(
                    PROFILE, target, None, JobOptions(steps=5, warmup=2)
                )
                out[name] = to_builtins(outcome)
            return out
        finally:
            await profiler.close()

    return asyncio.run(go())


def by_line(report: dict[str, Any]) -> dict[int, dict[str, Any]]:
    return {entry["line"]: entry for entry in report["lines"]}


def op_calls(entry: dict[str, Any], name: str) -> float:
    return sum(op["calls"] for op in entry["ops"] if op["name"] == name)


def test_the_matmul_line_is_hot_and_the_add_line_is_not(reports) -> None:
    report = reports["hot_and_cold"]
    assert report["attribution_note"] == ""
    lines = by_line(report)
    matmul, add = line_of("product = a @ b"), line_of("bump = small + 1")
    assert lines[matmul]["share"] >= 0.80
    assert op_calls(lines[matmul], "aten::mm") == 1
    assert op_calls(lines[add], "aten::add") == 1 and op_calls(lines[add], "aten::mm") == 0
    hot = [entry["line"] for entry in report["lines"] if entry["share"] >= 0.05]
    assert hot == [matmul]
    assert report["lines"][0]["line"] == matmul  # sorted by share
    assert "[512, 512]" in next(
        op["shapes"] for op in lines[matmul]["ops"] if op["name"] == "aten::mm"
    )


def test_loop_body_lines_count_every_iteration(reports) -> None:
    lines = by_line(reports["loop"])
    body, relu = line_of("total = total + x @ x"), line_of("total = total.relu()")
    header = line_of("for _ in range(n):")
    assert lines[body]["hits"] == 4 and op_calls(lines[body], "aten::mm") == 4
    assert lines[relu]["hits"] == 4 and op_calls(lines[relu], "aten::relu") == 4
    assert lines[header]["hits"] == 1 and op_calls(lines[header], "aten::mm") == 0
    assert lines[body]["cpu_us_min"] <= lines[body]["cpu_us_median"] <= lines[body]["cpu_us_max"]


def test_early_return_inside_with_block(reports) -> None:
    lines = by_line(reports["early_return"])
    assert op_calls(lines[line_of("return y.sigmoid()")], "aten::sigmoid") == 1
    assert op_calls(lines[line_of("y = x @ x")], "aten::mm") == 1
    assert line_of("z = y * 2") not in lines  # never ran: the function returned first


def test_closure_and_generator_expression(reports) -> None:
    lines = by_line(reports["closure_and_generator"])
    generator = lines[line_of("parts = sum(t.sum() for t in")]
    assert op_calls(generator, "aten::sum") == 3 and op_calls(generator, "aten::mul") == 2
    # The closure's matmul counts for the line that called it.
    assert op_calls(lines[line_of("return project(x) + parts")], "aten::mm") == 1
    assert line_of("return v @ weight") not in lines


def test_call_into_another_workspace_function(reports) -> None:
    lines = by_line(reports["calls_helper"])
    call = lines[line_of("return scale_up(y)")]
    assert op_calls(call, "aten::mm") == 1 and op_calls(call, "aten::mul") == 1
    assert call["share"] > lines[line_of("y = x + 1")]["share"]


def test_json_lines_schema(reports) -> None:
    entry = reports["hot_and_cold"]["lines"][0]
    assert {"line", "share", "cpu_us", "device_us", "ops", "kernels"} <= set(entry)
    assert {"name", "calls", "self_cpu_us"} <= set(entry["ops"][0])
    assert entry["device_us"] == 0.0 and entry["kernels"] == []


def test_with_stack_gives_callees_a_total_of_their_own(tmp_path: Path) -> None:
    """with_stack: the workspace function called from a line gets a function-level total."""
    source = read_source(LINES)
    target = function_named(source, str(LINES), "calls_helper")

    async def go() -> dict[str, Any]:
        profiler = Profiler(sys.executable, TraceStore(tmp_path), cwd=str(EXAMPLES))
        try:
            options = JobOptions(steps=3, warmup=1, with_stack=True)
            return to_builtins(await profiler.run_job(PROFILE, target, None, options))
        finally:
            await profiler.close()

    report = asyncio.run(go())
    [callee] = [c for c in report["callees"] if c["name"] == "scale_up"]
    helpers = (EXAMPLES / "helpers.py").read_text().splitlines()
    assert callee["file"].endswith("helpers.py") and helpers[callee["line"] - 1].startswith(
        "def scale_up("
    )
    call_line = by_line(report)[line_of("return scale_up(y)")]
    # scale_up is all of the line that calls it, so it gets that line's share of the function
    # (measured 0.73-0.85 against 0.80-0.90). The rest is `y = x + 1`, whose share swings with
    # load (its OpenMP threads stall while another process holds a core): an absolute
    # threshold failed in a loaded CI run at 0.38.
    assert callee["calls"] == 1 and 0 < callee["share"] <= 1
    assert callee["share"] == pytest.approx(call_line["share"], abs=0.15)
    assert all(c["name"] != "calls_helper" for c in report["callees"])  # not the function itself
    assert op_calls(call_line, "aten::mm") == 1  # still counted for the calling line
