"""A profile's own trace is analysed in the analysis child (``host/trace_analysis.py``), not in
the server: a user function whose trace is huge (here 80 MB of names that gzip cannot shrink,
which takes ~150 MB to analyse) leaves the language server's and the MCP server's peak RSS
within 50 MB, and the server answering. Before, the trace of a profile was read in a thread of
the server."""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_lsp
from pytest_lsp import ClientServerConfig, LanguageClient

from tests.conftest import REPO
from tests.reliability.conftest import ENV, TORCHSCOPE
from tests.reliability.lsp_helpers import profile, start_session
from tests.reliability.proc import held, my_child

pytestmark = pytest.mark.asyncio(loop_scope="module")

HUGE = """\
import os

import torch

NAMES = [os.urandom(20_000).hex() for _ in range(2000)]  # 80 MB of trace gzip cannot shrink


class Tagger(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(8, 8)

    def forward(self, x):
        for name in NAMES:
            with torch.profiler.record_function(name):
                pass
        return self.proj(x)


def small():
    return torch.ones(16, 16) @ torch.ones(16, 16)


# torchscope: huge(torch.randn(4, 8))
def huge(x):
    return Tagger()(x)
"""

#: What the server may grow by, at its peak, while a huge trace of its own job is analysed.
ALLOWED_MB = 50


@pytest.fixture(scope="module")
def code(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("huge") / "huge_trace.py"
    path.write_text(HUGE)
    return path


@pytest_lsp.fixture(
    scope="module",
    config=ClientServerConfig(server_command=[*TORCHSCOPE, "serve"], server_env=ENV),
)
async def client(lsp_client: LanguageClient, tmp_path_factory: Any) -> AsyncIterator[None]:
    await start_session(lsp_client, REPO, tmp_path_factory.mktemp("traces"))
    yield
    await lsp_client.shutdown_session()


QUICK = {"steps": 1, "warmup": 0}


async def test_lsp(client: LanguageClient, code: Path) -> None:
    result, _ = await profile(client, code, "small", **QUICK)
    assert result["ok"], result
    server = my_child("torchscope serve")
    before = held(server)
    result, _ = await profile(client, code, "huge", **QUICK)
    assert result["ok"], result
    after = held(server)
    print(f"\nlanguage server peak RSS {before.peak_rss_mb:.0f} -> {after.peak_rss_mb:.0f} MB")
    assert after.peak_rss_mb - before.peak_rss_mb <= ALLOWED_MB, (before, after)
    result, _ = await profile(client, code, "small", **QUICK)  # and it still answers
    assert result["ok"], result


async def test_mcp(code: Path, tmp_path: Path) -> None:
    from mcp import Client, StdioServerParameters

    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "torchscope", "mcp", "--trace-dir", str(tmp_path / "traces")],
        env={**os.environ, **ENV},
        cwd=REPO,
    )
    arguments = {"file": str(code), **QUICK}
    async with Client(params, read_timeout_seconds=240) as mcp:
        small = await mcp.call_tool("profile_function", {**arguments, "qualname": "small"})
        assert not small.is_error, small
        server = my_child("torchscope mcp")
        before = held(server)
        huge = await mcp.call_tool("profile_function", {**arguments, "qualname": "huge"})
        assert not huge.is_error, huge
        after = held(server)
        print(f"\nMCP server peak RSS {before.peak_rss_mb:.0f} -> {after.peak_rss_mb:.0f} MB")
        assert after.peak_rss_mb - before.peak_rss_mb <= ALLOWED_MB, (before, after)
        again = await mcp.call_tool("profile_function", {**arguments, "qualname": "small"})
        assert not again.is_error, again
