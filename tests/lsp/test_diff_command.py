"""``torchscope.diff`` and the re-profile comparison over real LSP: a real git repository in a
temp dir, the real server and worker."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from pytest_lsp import LanguageClient

from tests.worker.test_diff import LOOP, VECTORISED, make_repo

pytestmark = [pytest.mark.asyncio(loop_scope="module"), pytest.mark.slow]

DEF_LINE = 6  # 0-based line of ``def fn`` in LOOP and VECTORISED


async def run(client: LanguageClient, command: str, args: dict[str, Any]) -> Any:
    return await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command=command, arguments=[args])
    )


async def lens_titles(client: LanguageClient, uri: str) -> list[str]:
    lenses = await client.text_document_code_lens_async(
        types.CodeLensParams(text_document=types.TextDocumentIdentifier(uri=uri))
    )
    return [lens.command.title for lens in lenses or [] if lens.command]


async def test_compare_with_last_commit(client: LanguageClient, tmp_path: Path) -> None:
    file = make_repo(tmp_path / "repo", LOOP, VECTORISED)
    uri = file.as_uri()
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(
                uri=uri, language_id="python", version=1, text=file.read_text()
            )
        )
    )
    assert "Compare with last commit" in await lens_titles(client, uri)
    result = await run(client, "torchscope.diff", {"uri": uri, "line": DEF_LINE})
    assert result["ok"], result
    verdict = result["report"]["diff"]["verdict"]
    assert verdict["id"] == "faster" and "faster than HEAD" in verdict["headline"]
    assert any(m.message.endswith(verdict["headline"]) for m in client.messages)
    titles = await lens_titles(client, uri)
    assert verdict["headline"].split(" (")[0] in titles

    bad = await run(client, "torchscope.diff", {"uri": uri, "line": DEF_LINE, "rev": "nope"})
    assert not bad["ok"] and "'nope' is not a revision" in bad["error"]


async def test_reprofile_after_an_edit_compares_with_the_earlier_source(
    client: LanguageClient, tmp_path: Path
) -> None:
    file = make_repo(tmp_path / "repo2", LOOP, LOOP)
    uri = file.as_uri()
    first = await run(client, "torchscope.profile", {"uri": uri, "line": DEF_LINE})
    assert first["ok"] and "diff" not in first["report"]
    file.write_text(VECTORISED)  # the edit, saved
    second = await run(client, "torchscope.profile", {"uri": uri, "line": DEF_LINE})
    assert second["ok"], second
    verdict = second["report"]["diff"]["verdict"]
    assert verdict["id"] == "faster"
    assert "faster than before the edit" in verdict["headline"]
    third = await run(client, "torchscope.profile", {"uri": uri, "line": DEF_LINE})
    assert "diff" not in third["report"]  # nothing changed since the last run
