"""``torchscope.profileRanks`` end to end: real client, real server, torchrun with 2 gloo ranks."""

from __future__ import annotations

import asyncio

import pytest
from lsprotocol import types
from pytest_lsp import LanguageClient

from tests.conftest import EXAMPLES
from tests.lsp.conftest import hover_text
from tests.lsp.test_profile_command import def_line

pytestmark = pytest.mark.asyncio(loop_scope="module")

RANKS = EXAMPLES / "ranks.py"


async def test_profile_ranks_names_the_slowest_rank(client: LanguageClient) -> None:
    uri = RANKS.as_uri()
    line = def_line(RANKS, "step")
    waiting = asyncio.ensure_future(
        client.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    )
    # no call: the directive's, evaluated on each rank after the process group is up
    result = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(
            command="torchscope.profileRanks",
            arguments=[{"uri": uri, "line": line + 1, "nproc": 2}],
        )
    )
    await asyncio.wait_for(waiting, 60)
    assert result["ok"], result
    report = result["report"]
    assert [r["rank"] for r in report["ranks"]] == [0, 1]
    assert report["rank"] == 1  # rank 1 does the extra work
    diagnostics = [d for d in client.diagnostics[uri] if d.source == "torchscope"]
    [verdict] = [d for d in diagnostics if d.range.start.line == line]
    assert verdict.message.startswith("slowest of 2 ranks: rank 1")
    assert verdict.message.startswith(report["verdict"]["headline"] + " · cause: ")

    text = await hover_text(client, uri, line)
    assert "| rank | wall | compute | comm | waiting | exposed | hidden |" in text
    assert "| **1** (slowest) |" in text and "| 0 |" in text
    assert "**straggler** (rank 1)" in text


async def test_a_failing_rank_is_an_error_on_the_def_line(client: LanguageClient) -> None:
    uri = RANKS.as_uri()
    line = def_line(RANKS, "broken_on_rank_0")
    result = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(
            command="torchscope.profileRanks", arguments=[{"uri": uri, "line": line + 1}]
        )
    )
    assert not result["ok"]
    assert result["error"].startswith("rank 0 of 2: ") and "rank 0 has no data" in result["error"]
