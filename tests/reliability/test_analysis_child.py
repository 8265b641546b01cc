"""The language server analyses traces in a child process (``host/trace_analysis.py``): an
analysis that dies (killed, over the memory limit) is one message and the server answers
the next request; no analysis child outlives the server; opening a ~127 MB trace leaves the
server's own memory where it was (``bench/large_traces.py --server 2000`` does the same with
a 2 GB trace)."""

from __future__ import annotations

import asyncio
import gzip
import json
import os
import re
import signal
import subprocess
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient

from tests.conftest import REPO, SHARED_TRACES
from tests.reliability.conftest import ENV, TORCHSCOPE, marked_processes
from tests.reliability.hostile import GOOD
from tests.reliability.lsp_helpers import start_session
from torchscope.ingest.memory import MEMORY_FACTOR

ON_THE_SERVER = pytest.mark.asyncio(loop_scope="module")

BIG = SHARED_TRACES / "hta_ddp_v100_rank1.json.gz"  # 54 MB of JSON: ~2 s, ~45 MB RSS
CHILD = "torchscope.host.trace_analysis"


@pytest_lsp.fixture(
    scope="module",
    config=ClientServerConfig(server_command=[*TORCHSCOPE, "serve"], server_env=ENV),
)
async def client(lsp_client: LanguageClient, tmp_path_factory: Any) -> AsyncIterator[None]:
    await start_session(lsp_client, REPO, tmp_path_factory.mktemp("traces"))
    yield
    await lsp_client.shutdown_session()


def analyze(client: LanguageClient, path: Path, **extra: Any) -> asyncio.Future[Any]:
    params = types.ExecuteCommandParams(
        command="torchscope.analyzeTrace", arguments=[{"path": str(path), **extra}]
    )
    return asyncio.ensure_future(client.workspace_execute_command_async(params))


def _rss_mb(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/statm") as handle:
            return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
    except (OSError, ValueError, IndexError):
        return 0.0


async def answers(client: LanguageClient, tmp_path: Path) -> None:
    good = tmp_path / "good.json"
    good.write_bytes(GOOD)
    result = await analyze(client, good)
    assert result["ok"], result


@ON_THE_SERVER
async def test_analysis_killed_mid_way_is_one_message(
    client: LanguageClient, tmp_path: Path
) -> None:
    request = analyze(client, BIG)
    killed = None
    deadline = time.monotonic() + 30
    while killed is None and not request.done() and time.monotonic() < deadline:
        for pid, cmdline in marked_processes(keep_servers=False):
            if CHILD in cmdline and _rss_mb(pid) > 40:  # the busy one, not the spare
                os.kill(pid, signal.SIGKILL)
                killed = pid
        await asyncio.sleep(0.01)
    assert killed is not None, "the analysis finished before it could be killed"
    result = await asyncio.wait_for(request, 30)
    assert not result["ok"], result
    error = result["error"]
    assert BIG.name in error and "was killed by SIGKILL" in error, error
    assert "the server is still running" in error
    await answers(client, tmp_path)


@ON_THE_SERVER
async def test_analysis_over_the_memory_limit_is_stopped_and_named(
    client: LanguageClient, tmp_path: Path
) -> None:
    result = await asyncio.wait_for(analyze(client, BIG, max_memory="40M"), 60)
    assert not result["ok"], result
    error = result["error"]
    assert "the analysis stopped at" in error and "(limit 40.0 MB)" in error, error
    assert "--steps" in error and "maxMemory" in error
    await answers(client, tmp_path)


@ON_THE_SERVER
async def test_a_trace_needing_more_than_the_limit_is_refused_before_it_is_read(
    client: LanguageClient, tmp_path: Path
) -> None:
    # 54 MB of JSON needs about 0.55 × 54 + 64 = 94 MB by the estimate (ingest/memory.py):
    # over an 80 MB limit, so the child refuses it with the numbers before reading it (the
    # analysis would reach ~45 MB: the watcher would not have stopped it).
    result = await asyncio.wait_for(analyze(client, BIG, max_memory="80M"), 60)
    assert not result["ok"], result
    error = result["error"]
    assert error.startswith(f"{BIG}: too large to analyse whole on this machine: "), error
    need = re.search(
        rf"of JSON needs about (\d+\.\d) MB of memory \({MEMORY_FACTOR:g}× its size \+ 64\.0 MB\)",
        error,
    )
    assert need is not None and 85 < float(need.group(1)) < 110, error
    assert "the analysis may take 80.0 MB (torchscope.maxMemory / --max-memory)" in error
    assert "--steps FIRST-LAST" in error and "a machine with more memory" in error
    await answers(client, tmp_path)


@ON_THE_SERVER
async def test_a_bad_memory_limit_is_named(client: LanguageClient, tmp_path: Path) -> None:
    result = await asyncio.wait_for(analyze(client, BIG, max_memory="lots"), 30)
    assert not result["ok"] and "is not a memory size" in result["error"], result


def _send(server: subprocess.Popen[bytes], message: dict[str, Any]) -> None:
    body = json.dumps({"jsonrpc": "2.0", **message}).encode()
    assert server.stdin is not None
    server.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    server.stdin.flush()


def _children_appear(before: set[int], timeout_s: float = 30) -> list[tuple[int, str]]:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        found = [
            p for p in marked_processes(keep_servers=False) if CHILD in p[1] and p[0] not in before
        ]
        if found:
            return found
        time.sleep(0.05)
    raise AssertionError("no analysis child started")


@pytest.mark.parametrize("how", ["shutdown", "SIGKILL"])
def test_no_analysis_child_outlives_the_server(tmp_path: Path, how: str) -> None:
    """A server that analysed a trace (so its spare child waits) exits cleanly or is
    killed: no analysis child is left."""
    before = {pid for pid, _ in marked_processes(keep_servers=False)}  # this module's server
    server = subprocess.Popen(
        [*TORCHSCOPE, "serve"],
        env=ENV,
        cwd=REPO,
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        _send(
            server,
            {
                "id": 1,
                "method": "initialize",
                "params": {"processId": None, "rootUri": REPO.as_uri(), "capabilities": {}},
            },
        )
        _send(server, {"method": "initialized", "params": {}})
        _send(
            server,
            {
                "id": 2,
                "method": "workspace/executeCommand",
                "params": {"command": "torchscope.analyzeTrace", "arguments": [{"path": str(BIG)}]},
            },
        )
        _children_appear(before)
        if how == "SIGKILL":
            server.kill()
        else:
            _send(server, {"id": 3, "method": "shutdown", "params": None})
            _send(server, {"method": "exit", "params": None})
        server.wait(90)  # a clean exit first stops the worker it was starting (torch import)
    finally:
        if server.poll() is None:
            server.kill()
            server.wait(30)
    deadline = time.monotonic() + 10
    while (left := new_processes(before)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert left == [], left


def new_processes(before: set[int]) -> list[tuple[int, str]]:
    return [p for p in marked_processes(keep_servers=False) if p[0] not in before]


COPIES = 3  # 650k events, ~127 MB of JSON
GROWTH_MB = 50


def write_copies(trace: Path, out: Path, copies: int) -> None:
    """``trace``'s events ``copies`` times over in one compact JSON trace at ``out`` (faster
    to write than ``bench/run_all.py``'s ``synthesise``, which shifts each copy)."""
    doc = json.loads(gzip.decompress(trace.read_bytes()))
    body = json.dumps(doc.pop("traceEvents"), separators=(",", ":")).encode()[1:-1]
    with out.open("wb") as fh:
        fh.write(json.dumps(doc).encode()[:-1] + b',"traceEvents":[')
        fh.write(b",".join([body] * copies) + b"]}")


async def peak_while(pid: int, request: asyncio.Future[Any]) -> float:
    """The highest RSS of ``pid`` seen until ``request`` is done, sampled every 10 ms."""
    peak = _rss_mb(pid)
    while not request.done():
        peak = max(peak, _rss_mb(pid))
        await asyncio.sleep(0.01)
    return max(peak, _rss_mb(pid))


@ON_THE_SERVER
async def test_opening_a_100_mb_trace_leaves_the_server_rss_flat(
    client: LanguageClient, tmp_path: Path
) -> None:
    big = tmp_path / "synth.json"
    write_copies(BIG, big, COPIES)
    assert big.stat().st_size > 90 << 20
    await answers(client, tmp_path)  # the server's lazy imports, done once
    pid = client._server.pid  # type: ignore[union-attr]  # the `torchscope serve` process
    before = _rss_mb(pid)
    request = analyze(client, big)
    peak = await asyncio.wait_for(peak_while(pid, request), 120)
    result = request.result()
    assert result["ok"], result
    assert result["report"]["verdict"]["headline"]
    assert peak - before < GROWTH_MB, f"server RSS {before:.0f} MB → peak {peak:.0f} MB"
