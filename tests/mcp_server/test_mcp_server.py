"""``torchscope mcp`` driven by the MCP SDK's own stdio client: a real server subprocess, the
real worker on real torch."""

from __future__ import annotations

import json
import os
import shutil
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, TextIO

import pytest
from mcp import Client, StdioServerParameters  # the dev extra installs the MCP SDK
from mcp.client.stdio import stdio_client
from mcp.types import CallToolResult

from tests.conftest import FIXTURES, REPO, SHARED_TRACES
from torchscope.analysis.results import VERDICT_IDS

SMALL = "fn(torch.randn(8, 8), torch.randn(8, 8), torch.randn(8, 8))"


@asynccontextmanager
async def torchscope_mcp(trace_dir: Path, errlog: TextIO | None = None) -> AsyncIterator[Client]:
    """The server on stdio; its stderr to ``errlog`` if given."""
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "torchscope", "mcp", "--trace-dir", str(trace_dir), "--timeout", "120"],
        env={**os.environ, "PYTHONPATH": str(REPO / "server")},
        cwd=REPO,
    )
    server = params if errlog is None else stdio_client(params, errlog=errlog)
    async with Client(server, read_timeout_seconds=300) as client:
        yield client


def text(result: CallToolResult) -> str:
    return "\n".join(getattr(block, "text", "") for block in result.content)


async def test_profile_a_failure_and_a_good_call_again(trace_dir: Path, tmp_path: Path) -> None:
    boom = tmp_path / "boom.py"
    boom.write_text("import torch\n\n\ndef boom():\n    x = torch.ones(2)\n    raise ValueError('no luck')\n")
    async with torchscope_mcp(trace_dir) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        assert set(tools) == {
            "profile_function",
            "profile_in_run",
            "profile_running",
            "analyze_trace",
            "compare_compile",
            "explain_finding",
            "try_fix",
        }
        schema = tools["profile_function"].input_schema
        assert set(schema["properties"]) >= {"file", "qualname", "call", "steps"}
        assert schema["required"] == ["file", "qualname"]

        args: dict[str, Any] = {"file": "examples/matmul_add.py", "qualname": "fn", "call": SMALL, "steps": 3}
        result = await client.call_tool("profile_function", args)
        assert not result.is_error, text(result)
        report = result.structured_content
        assert report["verdict"]["id"] == "overhead-bound", report["verdict"]
        assert report["target"] == {"file": str(REPO / "examples" / "matmul_add.py"), "qualname": "fn", "line": 14}
        assert report["call"] == SMALL and Path(report["trace_path"]).is_file()
        assert f"verdict: {report['verdict']['headline']}" in text(result)
        assert report["trace_path"] in text(result)

        failed = await client.call_tool("profile_function", {"file": str(boom), "qualname": "boom"})
        assert failed.is_error and failed.structured_content is None
        assert f"{boom}:6" in text(failed) and "ValueError" in text(failed) and "no luck" in text(failed)

        missing = await client.call_tool("profile_function", {"file": "examples/matmul_add.py", "qualname": "nope"})
        assert missing.is_error and "nope" in text(missing)

        again = await client.call_tool("profile_function", {"file": "examples/matmul_add.py", "qualname": "fn"})
        assert not again.is_error, text(again)
        assert again.structured_content["call"] == SMALL  # the first directive
        assert again.structured_content["verdict"]["id"] in VERDICT_IDS


async def test_analyze_trace_is_analyze_json_and_findings_are_explained(trace_dir: Path) -> None:
    name = "hta_cuda_event_sync_a100.json.gz"
    snapshot = json.loads((REPO / "tests" / "data" / "snapshots" / f"{name}.report.json").read_text())
    async with torchscope_mcp(trace_dir) as client:
        result = await client.call_tool("analyze_trace", {"path": f"tests/data/traces/{name}"})
        assert not result.is_error, text(result)
        report = dict(result.structured_content)
        assert report.pop("trace_path") == str(SHARED_TRACES / name)
        snapshot.pop("trace_path")
        assert report == snapshot  # the same object as `torchscope analyze --json`
        assert report["verdict"]["headline"] in text(result)

        rule = report["findings"][0]["rule"]
        explained = await client.call_tool("explain_finding", {"rule": rule})
        assert not explained.is_error
        assert text(explained).startswith(f"### {rule}\n") and "What to do" in text(explained)
        assert explained.structured_content["docs"] == report["findings"][0]["docs"]

        verdict = await client.call_tool("explain_finding", {"rule": "overhead-bound"})
        assert "dispatch" in text(verdict)
        unknown = await client.call_tool("explain_finding", {"rule": "slow-ness"})
        assert unknown.is_error and "overhead-bound" in text(unknown) and "sync" in text(unknown)

        bad = await client.call_tool("analyze_trace", {"path": "README.md"})
        assert bad.is_error and "README.md" in text(bad)


@pytest.mark.slow
async def test_compare_compile(trace_dir: Path) -> None:
    async with torchscope_mcp(trace_dir) as client:
        bad = await client.call_tool(
            "compare_compile", {"file": "examples/matmul_add.py", "qualname": "fn", "mode": "fast"}
        )
        assert bad.is_error and "reduce-overhead" in text(bad)
        args = {"file": "examples/matmul_add.py", "qualname": "fn", "call": SMALL, "steps": 3}
        result = await client.call_tool("compare_compile", args)
        assert not result.is_error, text(result)
        compare = result.structured_content["compare"]
        assert result.structured_content["verdict"]["id"] in VERDICT_IDS  # the eager profile
        if compare["error"] is None:
            assert compare["verdict"]["id"] in {"keep-eager", "compile-wins", "no-difference", "inconclusive"}
            decision = compare["comparison"]["decision"]
            assert f"comparison: {decision}: " in text(result)
            assert f"torch.compile (mode=default): {compare['verdict']['headline']}" in text(result)
        else:  # no C++ compiler for Inductor: the eager profile still comes back
            assert compare["error"]["message"] in text(result)


@pytest.mark.slow
async def test_try_fix_is_fix_try_json_and_writes_nothing(trace_dir: Path, tmp_path: Path) -> None:
    file = Path(shutil.copy(FIXTURES / "fix_samples.py", tmp_path / "fix_samples.py"))
    before = file.read_text()
    async with torchscope_mcp(trace_dir) as client:
        unknown = await client.call_tool("try_fix", {"file": str(file), "qualname": "train_step", "fix": "nope"})
        assert unknown.is_error and "no fix 'nope'" in text(unknown) and "zero-grad-none" in text(unknown)
        not_here = await client.call_tool("try_fix", {"file": str(file), "qualname": "no_attention", "fix": "sdpa"})
        assert not_here.is_error and "does not apply to no_attention" in text(not_here)

        result = await client.call_tool("try_fix", {"file": str(file), "qualname": "train_step", "fix": "zero-grad-none"})
        assert not result.is_error, text(result)
        data = result.structured_content
        assert set(data) == {
            "id", "verdict", "ratio", "interval", "same_outputs", "patch", "refused", "message", "detail",
            "assumes", "checks", "unchecked", "comparison", "applied",
        }  # fmt: skip
        assert data["comparison"]["decision"] == data["verdict"], data["comparison"]  # issue 54
        assert {"outputs", "requires_grad", "grads", "parameters"} <= set(data["checks"]), data
        assert data["assumes"] and f"assumes: {data['assumes']}" in text(result)
        assert "checked: outputs, requires_grad, grads" in text(result)
        assert all(f"not checked: {u}" in text(result) for u in data["unchecked"])
        assert data["id"] == "zero-grad-none" and data["same_outputs"] is True and data["applied"] is False
        assert data["verdict"] == "faster" and data["refused"] is None, data
        lo, hi = data["interval"]
        assert 1 < lo <= data["ratio"] <= hi
        assert "+    model.zero_grad(set_to_none=True)" in data["patch"]
        assert data["message"] in text(result) and data["patch"].strip() in text(result)
    assert file.read_text() == before  # never writes the file


async def test_profile_in_run(trace_dir: Path, tmp_path: Path) -> None:
    """`profile_in_run`: a script's real call, then a clear error for a program that never calls."""
    (tmp_path / "model.py").write_text("import torch\n\n\ndef scale(x):\n    return (x * 2).sum()\n")
    (tmp_path / "main.py").write_text(
        "import sys, torch\nsys.path.insert(0, __file__.rsplit('/', 1)[0])\nimport model\n"
        "for _ in range(3):\n    model.scale(torch.ones(16))\n"
    )
    async with torchscope_mcp(trace_dir) as client:
        spec = f"{tmp_path / 'model.py'}::scale"
        args: dict[str, Any] = {"targets": [spec], "entry": ["python", str(tmp_path / "main.py")], "calls": 2}
        result = await client.call_tool("profile_in_run", args)
        assert not result.is_error, text(result)
        [report] = result.structured_content["targets"]
        assert report["run"]["calls_seen"] == 2 and report["run"]["exit"] == "stopped"
        assert report["inputs"]["source"] == "run" and report["verdict"]["id"] in VERDICT_IDS
        assert "the program `python" in text(result) and "stopped" in text(result)

        args["entry"] = ["python", "-c"]
        bad = await client.call_tool("profile_in_run", args)
        assert bad.is_error and "give the program" in text(bad)


async def test_a_call_that_misses_the_target_and_a_run_in_train_mode(
    trace_dir: Path, tmp_path: Path
) -> None:
    """The CLI's failure for a call that never reaches the target, and `mode` of
    `profile_in_run` on the team's nanoGPT-shaped train.py (eval calls first)."""
    folder = Path(shutil.copytree(FIXTURES / "nanogpt", tmp_path / "nanogpt"))
    model = str(folder / "model.py")
    async with torchscope_mcp(trace_dir) as client:
        args: dict[str, Any] = {
            "file": model,
            "qualname": "CausalSelfAttention.forward",
            "call": "MLP(GPTConfig())(torch.randn(4, 32, 32))",
            "steps": 2,
        }
        missed = await client.call_tool("profile_function", args)
        assert missed.is_error
        said = "the call never called CausalSelfAttention.forward (it called MLP.forward)"
        assert said in text(missed)

        spec = f"{model}::CausalSelfAttention.forward"
        entry = ["python", str(folder / "train.py")]
        run = {"targets": [spec], "entry": entry, "calls": 2, "mode": "train"}
        result = await client.call_tool("profile_in_run", run)
        assert not result.is_error, text(result)
        [report] = result.structured_content["targets"]
        calls = report["run"]["calls"]
        assert [c["training"] for c in calls] == [True, True], calls
        assert all(c["grad_enabled"] and c["caller"] == "<module> (train.py:36)" for c in calls)
        assert report["run"]["mode_note"] in text(result)
        assert "profiled 2 training calls from train.py:36" in text(result)


async def test_the_profilers_chatter_stays_out_of_the_servers_stderr(
    trace_dir: Path, tmp_path: Path
) -> None:
    """The server's stderr (an MCP client's log) gets the worker's stderr, but not torch's
    USDT lines nor the one ``chatty`` writes to fd 2 as the C++ side does."""
    target = {"file": str(FIXTURES / "run_words" / "model.py"), "qualname": "chatty"}
    with open(tmp_path / "server.err", "w+", encoding="utf-8") as errlog:
        async with torchscope_mcp(trace_dir, errlog) as client:
            result = await client.call_tool("profile_function", {**target, "call": "chatty(1.0)", "steps": 2})
            assert not result.is_error, text(result)
    logged = (tmp_path / "server.err").read_text()
    assert "USDT:" not in logged and "profiler_start" not in logged, logged
