"""A worker's end is one path: jobs through one real language server, a third of them failing
in every way a worker can end (a crash, ``os._exit``, ``sys.exit``, a timeout, a cancel, the
memory limit), leave the server holding what it held after the first job: the same open fds,
threads and child processes (the worker, its guardian, the analysis child), and RSS within
10 MB. Before, each dead worker left its guardian and the write end of its pipe behind.

Every failure but ``sys.exit`` costs a fresh worker (``import torch``, ~3 s here), so the
suite runs each way once (``TORCHSCOPE_SOAK_JOBS``, default 18, plus a last good job): a leak
per ended worker shows as one fd and one process more. The issue's 200 are
``TORCHSCOPE_SOAK_JOBS=200``.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient

from tests.conftest import REPO
from tests.reliability.cases import def_line
from tests.reliability.conftest import ENV, TORCHSCOPE
from tests.reliability.lsp_helpers import start_session
from tests.reliability.proc import Held, held, my_child

pytestmark = pytest.mark.asyncio(loop_scope="module")

JOBS = int(os.environ.get("TORCHSCOPE_SOAK_JOBS", "18"))

#: (function, what the answer must say, per-job options); every third job is one of these.
FAILURES: list[tuple[str, str, dict[str, Any]]] = [
    ("segfault", "worker", {}),
    ("calls_os_exit", "worker", {}),
    ("calls_exit", "call-raised", {}),
    ("spins", "timeout", {"timeout_s": 1}),
    ("spins", "cancelled", {}),
    ("eats_memory", "memory", {"max_memory": "1G"}),
]


@pytest_lsp.fixture(
    scope="module",
    config=ClientServerConfig(server_command=[*TORCHSCOPE, "serve"], server_env=ENV),
)
async def client(lsp_client: LanguageClient, tmp_path_factory: Any) -> AsyncIterator[None]:
    traces = tmp_path_factory.mktemp("traces")
    await start_session(lsp_client, REPO, traces, progress=True, steps=2, warmup=1, timeout_s=60)
    yield
    await lsp_client.shutdown_session()


async def settled(server: int, first: Held, wait_s: float = 5.0) -> Held:
    """What the server holds once it is back to ``first`` (at most ``wait_s``): a process
    ended a moment ago may still have its waiting thread."""
    for _ in range(int(wait_s / 0.1)):
        now = held(server)
        if now.fds <= first.fds and now.threads <= first.threads and now.children == first.children:
            return now
        await asyncio.sleep(0.1)
    return held(server)


async def _job(client: LanguageClient, cases: Path, index: int) -> str:
    """Run job ``index`` of the plan; what its answer said ("ok", a failure kind, "cancelled")."""
    name, _, extra = FAILURES[(index // 3) % len(FAILURES)] if index % 3 == 2 else ("good", "", {})
    cancel = name == "spins" and not extra
    token = f"soak-{index}"
    client.progress_reports.setdefault(token, [])
    args = {"uri": cases.as_uri(), "line": def_line(cases, name) + 1, **extra}
    params = types.ExecuteCommandParams(
        command="torchscope.profile", arguments=[args], work_done_token=token
    )
    pending = asyncio.ensure_future(client.workspace_execute_command_async(params))
    if cancel:
        while not any(
            isinstance(r, types.WorkDoneProgressReport) for r in client.progress_reports[token]
        ):
            await asyncio.sleep(0.02)
        client.protocol.notify(
            types.WINDOW_WORK_DONE_PROGRESS_CANCEL, types.WorkDoneProgressCancelParams(token=token)
        )
    result = await asyncio.wait_for(pending, 120)
    if result["ok"]:
        return "ok"
    return str(result.get("kind") or result.get("error"))


async def test_every_way_a_worker_ends_leaves_the_server_as_after_the_first_job(
    client: LanguageClient, cases: Path
) -> None:
    server = my_child("torchscope serve")
    assert await _job(client, cases, 0) == "ok"
    await asyncio.sleep(1)  # the first job's helpers (pygls' and asyncio's threads) have started
    first = held(server)
    wrong = []
    for index in range(1, JOBS):
        said = await _job(client, cases, index)
        expected = FAILURES[(index // 3) % len(FAILURES)][1] if index % 3 == 2 else "ok"
        if said != expected:
            wrong.append((index, expected, said))
    # It ends as it began, a good job done (index 3k is one), then the last look.
    assert await _job(client, cases, 3 * JOBS) == "ok"
    last = await settled(server, first)
    print(f"\n{JOBS + 1} jobs: after the first {first}; at the end {last}")
    assert not wrong, wrong
    assert last.fds <= first.fds, (first, last)
    assert last.threads <= first.threads, (first, last)
    assert last.children == first.children, (first, last)
    assert last.rss_mb - first.rss_mb <= 10, (first, last)
