"""``torchscope attach`` from the editor and from a coding agent: the real language server
(pytest-lsp) lists the running job and profiles its ``step`` with ``torchscope.profileRunning``
(the verdict published on the ``def`` line); the real MCP server (the SDK's stdio client)
answers ``profile_running``. Both on a real training job started under the agent."""

from __future__ import annotations

import atexit
import os
import shutil
import sys
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient

from tests.agent.conftest import LOOP, agent_env, start_job
from tests.conftest import REPO
from tests.reliability.lsp_helpers import command_and_diagnostics

pytestmark = pytest.mark.asyncio(loop_scope="module")

RUNTIME = Path(tempfile.mkdtemp(prefix="ts"))
RUNTIME.chmod(0o700)
atexit.register(shutil.rmtree, RUNTIME, True)  # also when this module is only collected


@pytest_lsp.fixture(
    scope="module",
    config=ClientServerConfig(
        server_command=[sys.executable, "-m", "torchscope", "serve"],
        server_env=agent_env(RUNTIME),
    ),
)
async def client(lsp_client: LanguageClient) -> AsyncIterator[None]:
    await lsp_client.initialize_session(
        types.InitializeParams(
            capabilities=types.ClientCapabilities(
                window=types.WindowClientCapabilities(work_done_progress=True)
            ),
            root_uri=REPO.as_uri(),
            initialization_options={"settings": {"trace_dir": str(RUNTIME / "traces")}},
        )
    )
    yield
    await lsp_client.shutdown_session()
    shutil.rmtree(RUNTIME, ignore_errors=True)


def _def_line(name: str) -> int:
    lines = LOOP.read_text().splitlines()
    return next(i for i, text in enumerate(lines) if text.startswith(f"def {name}("))


async def test_lsp_lists_the_job_and_profiles_its_step(client: LanguageClient) -> None:
    job = start_job(RUNTIME, steps=100_000, pause=0.01)
    listed = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command="torchscope.listJobs", arguments=[{}])
    )
    assert [j["pid"] for j in listed["jobs"]] == [job.pid]
    uri = LOOP.as_uri()
    answer, diagnostics = await command_and_diagnostics(
        client,
        "torchscope.profileRunning",
        {"uri": uri, "qualname": "step", "pid": job.pid, "calls": 2},
    )
    assert answer["ok"], answer
    report = answer["report"]
    assert report["source"] == "attached" and report["pid"] == job.pid
    assert len(report["attached"]["profiled"]) == 2
    verdict = [d for d in diagnostics if d.range.start.line == _def_line("step")]
    assert verdict and report["verdict"]["headline"] in verdict[0].message
    bad = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(
            command="torchscope.profileRunning",
            arguments=[{"uri": uri, "qualname": "step", "pid": "x"}],
        )
    )
    assert not bad["ok"] and "'pid' must be a process id" in bad["error"]
    assert job.wait_for("loss"), "the job goes on"


@pytest.mark.skipif(sys.version_info < (3, 10), reason="the MCP SDK needs Python >= 3.10")
async def test_mcp_profile_running() -> None:
    from mcp import Client, StdioServerParameters

    job = start_job(RUNTIME, steps=100_000, pause=0.01)
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "torchscope", "mcp", "--trace-dir", str(RUNTIME / "traces")],
        env=agent_env(RUNTIME),
        cwd=REPO,
    )
    async with Client(params, read_timeout_seconds=120) as mcp:
        result = await mcp.call_tool(
            "profile_running", {"pid": job.pid, "target": f"{LOOP}::Net.forward", "calls": 2}
        )
        assert not result.is_error, result.content
        data = result.structured_content
        assert data["source"] == "attached" and data["pid"] == job.pid
        assert data["target"]["qualname"] == "Net.forward" and data["verdict"]["id"]
        gone = await mcp.call_tool(
            "profile_running", {"pid": os.getpid(), "target": f"{LOOP}::step"}
        )
        assert gone.is_error and "no torchscope agent listens" in gone.content[0].text
    assert job.wait_for("loss"), "the job goes on"
