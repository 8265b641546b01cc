"""Every hostile trace (``hostile.py``) through the real language server
(``torchscope.analyzeTrace``), and through the real MCP server (``analyze_trace``): the
analysis or one message naming the file, never a traceback, and the server answers the next
request. The analysis runs in a child process (``host/trace_analysis.py``)."""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient

from tests.conftest import REPO
from tests.reliability.conftest import ENV, TORCHSCOPE
from tests.reliability.hostile import (
    CASES,
    GOOD,
    IDS,
    Hostile,
    as_reader,
    fuzz_strategy,
    made,
    skip_unless_testable,
    write_fuzzed,
)
from tests.reliability.lsp_helpers import start_session

pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest_lsp.fixture(
    scope="module",
    config=ClientServerConfig(server_command=[*as_reader(), *TORCHSCOPE, "serve"], server_env=ENV),
)
async def client(lsp_client: LanguageClient, tmp_path_factory: Any) -> AsyncIterator[None]:
    await start_session(lsp_client, REPO, tmp_path_factory.mktemp("traces"))
    yield
    await lsp_client.shutdown_session()


async def analyze_over_lsp(client: LanguageClient, path: Path | str, **extra: Any) -> Any:
    return await client.workspace_execute_command_async(
        types.ExecuteCommandParams(
            command="torchscope.analyzeTrace", arguments=[{"path": str(path), **extra}]
        )
    )


async def still_answers(client: LanguageClient, tmp_path: Path) -> None:
    """The server answers the next request: a good trace analyses."""
    good = tmp_path / "good.json"
    good.write_bytes(GOOD)
    result = await analyze_over_lsp(client, good)
    assert result["ok"], result


@pytest.mark.parametrize("case", CASES, ids=IDS)
async def test_lsp(client: LanguageClient, case: Hostile, tmp_path: Path) -> None:
    skip_unless_testable(case)
    path = made(case, tmp_path)
    shown = len(client.messages)
    result = await analyze_over_lsp(client, path)
    if case.needle is None:
        assert result["ok"], result
        assert case.check is not None
        case.check(result["report"])
    else:
        assert not result["ok"], result
        assert path.name in result["error"] and case.needle in result["error"], result
        assert "Traceback" not in result["error"]
        [message] = [m.message for m in client.messages[shown:]]
        assert message == f"torchscope: {result['error']}"
    await still_answers(client, tmp_path)


async def test_mcp(tmp_path: Path) -> None:
    """Through the MCP SDK's own client: the lone surrogate (which used to kill the server),
    deep nesting, a FIFO and the gzip bomb; the server answers after each."""
    from mcp import Client, StdioServerParameters

    from tests.reliability.hostile import CASES as ALL

    chosen = {c.name: c for c in ALL}
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "torchscope", "mcp", "--trace-dir", str(tmp_path / "traces")],
        env={**os.environ, **ENV},
        cwd=REPO,
    )
    good = tmp_path / "good.json"
    good.write_bytes(GOOD)
    async with Client(params, read_timeout_seconds=120) as mcp:
        for name in ("lone-surrogate", "deep-nesting", "fifo", "gzip-bomb"):
            case = chosen[name]
            path = made(case, tmp_path)
            result = await mcp.call_tool("analyze_trace", {"path": str(path)})
            said = "\n".join(getattr(block, "text", "") for block in result.content)
            if case.needle is None:
                assert not result.is_error, said
                assert case.check is not None
                case.check(dict(result.structured_content or {}))
            else:
                assert result.is_error and case.needle in said and path.name in said, said
                assert "Traceback" not in said
            again = await mcp.call_tool("analyze_trace", {"path": str(good)})
            assert not again.is_error, again


async def test_lsp_fuzz(client: LanguageClient, tmp_path: Path) -> None:
    """Spliced traces (hypothesis, a bounded derandomised sample) through the server: each is
    a report or one message naming the file; the server answers after all of them."""
    from hypothesis import HealthCheck, given, settings

    drawn: list[tuple[bytes, bool]] = []

    @settings(max_examples=30, deadline=None, derandomize=True, database=None,
              suppress_health_check=list(HealthCheck))
    @given(fuzz_strategy())
    def draw(case: tuple[bytes, bool]) -> None:
        drawn.append(case)

    draw()  # hypothesis draws here; the server (async) reads each one below
    for index, (data, zipped) in enumerate(drawn):
        folder = tmp_path / str(index)
        folder.mkdir()
        path = write_fuzzed(folder, data, zipped)
        result = await analyze_over_lsp(client, path)
        if not result["ok"]:
            assert result["error"].startswith(f"{path}: "), (data, result)
            assert "Traceback" not in result["error"] and "internal error" not in result["error"]
    await still_answers(client, tmp_path)
