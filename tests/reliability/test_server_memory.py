"""Opening a large trace leaves the language server's memory where it was: the analysis runs
in a child process (``host/trace_analysis.py``) and only the bounded report comes back.

A ~100 MB synthetic trace (the real DDP trace's events written three times over; faster to
write than ``bench/run_all.py``'s ``synthesise``, which shifts each copy) opened through the
real server (``torchscope.analyzeTrace``, as Open trace does); the server process's own VmRSS is
sampled while the result is on its way. ``bench/large_traces.py --server 2000`` does the
same with the issue's 2 GB trace."""

from __future__ import annotations

import asyncio
import gzip
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient

from tests.conftest import REPO, SHARED_TRACES
from tests.reliability.conftest import ENV, TORCHSCOPE
from tests.reliability.hostile import GOOD
from tests.reliability.lsp_helpers import start_session

ON_THE_SERVER = pytest.mark.asyncio(loop_scope="module")
COPIES = 3  # 650k events, ~127 MB of JSON
GROWTH_MB = 50


@pytest_lsp.fixture(
    scope="module",
    config=ClientServerConfig(server_command=[*TORCHSCOPE, "serve"], server_env=ENV),
)
async def client(lsp_client: LanguageClient, tmp_path_factory: Any) -> AsyncIterator[None]:
    await start_session(lsp_client, REPO, tmp_path_factory.mktemp("traces"))
    yield
    await lsp_client.shutdown_session()


def vm_rss_mb(pid: int) -> float:
    """The process's resident memory now (``/proc/PID/status`` VmRSS), in MB."""
    with open(f"/proc/{pid}/status") as status:
        line = next(ln for ln in status if ln.startswith("VmRSS:"))
    return int(line.split()[1]) / 1024


def write_copies(trace: Path, out: Path, copies: int) -> None:
    """``trace``'s events ``copies`` times over in one compact JSON trace at ``out``."""
    doc = json.loads(gzip.decompress(trace.read_bytes()))
    body = json.dumps(doc.pop("traceEvents"), separators=(",", ":")).encode()[1:-1]
    with out.open("wb") as fh:
        fh.write(json.dumps(doc).encode()[:-1] + b',"traceEvents":[')
        fh.write(b",".join([body] * copies) + b"]}")


async def open_trace(client: LanguageClient, path: Path) -> dict[str, Any]:
    params = types.ExecuteCommandParams(
        command="torchscope.analyzeTrace", arguments=[{"path": str(path)}]
    )
    result: Any = await client.workspace_execute_command_async(params)
    return dict(result)


async def peak_while(pid: int, request: asyncio.Future[Any]) -> float:
    """The highest VmRSS of ``pid`` seen until ``request`` is done, sampled every 10 ms."""
    peak = vm_rss_mb(pid)
    while not request.done():
        peak = max(peak, vm_rss_mb(pid))
        await asyncio.sleep(0.01)
    return max(peak, vm_rss_mb(pid))


@ON_THE_SERVER
async def test_opening_a_100_mb_trace_leaves_the_server_rss_flat(
    client: LanguageClient, tmp_path: Path
) -> None:
    big = tmp_path / "synth.json"
    write_copies(SHARED_TRACES / "hta_ddp_v100_rank1.json.gz", big, COPIES)
    assert big.stat().st_size > 90 << 20
    small = tmp_path / "good.json"
    small.write_bytes(GOOD)
    assert (await open_trace(client, small))["ok"]  # the server's lazy imports, done once
    pid = client._server.pid  # type: ignore[union-attr]  # the `torchscope serve` process
    before = vm_rss_mb(pid)
    request = asyncio.ensure_future(open_trace(client, big))
    peak = await asyncio.wait_for(peak_while(pid, request), 120)
    result = request.result()
    assert result["ok"], result
    assert result["report"]["verdict"]["headline"]
    assert peak - before < GROWTH_MB, f"server RSS {before:.0f} MB → peak {peak:.0f} MB"
