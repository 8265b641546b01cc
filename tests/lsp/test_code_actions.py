"""``textDocument/codeAction`` on torchscope's diagnostics: Open trace and Re-profile."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Union

import pytest
from lsprotocol import types
from pytest_lsp import LanguageClient

from tests.lsp.test_profile_command import MATMUL, SMALL, def_line, profile_and_wait

pytestmark = pytest.mark.asyncio(loop_scope="module")


def fix_code_action_parsing(client: LanguageClient) -> None:
    """lsprotocol's client-side hook reads every ``CodeAction`` that has a ``command`` as a
    ``Command`` (the command object turns into a string); tell the two apart by the type of
    ``command`` instead, as the LSP spec does."""
    converter = client.protocol._converter

    def hook(obj: Any, _: Any) -> Union[types.Command, types.CodeAction]:
        if isinstance(obj.get("command"), str):
            return converter.structure(obj, types.Command)
        return converter.structure(obj, types.CodeAction)

    converter.register_structure_hook(Union[types.Command, types.CodeAction], hook)


async def actions_for(
    client: LanguageClient,
    uri: str,
    diagnostics: list[types.Diagnostic],
    only: list[types.CodeActionKind] | None = None,
) -> list[types.CodeAction]:
    fix_code_action_parsing(client)
    found = await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            range=diagnostics[0].range,
            context=types.CodeActionContext(diagnostics=diagnostics, only=only),
        )
    )
    assert found is not None
    assert all(isinstance(a, types.CodeAction) for a in found), found
    return [a for a in found if isinstance(a, types.CodeAction)]


async def test_verdict_offers_open_trace_and_reprofile(client: LanguageClient) -> None:
    uri = MATMUL.as_uri()
    line = def_line(MATMUL, "fn")
    result, diagnostics = await profile_and_wait(client, {"uri": uri, "line": line, "call": SMALL})
    assert result["ok"], result
    [verdict] = [d for d in diagnostics if d.source == "torchscope" and d.range.start.line == line]
    actions = await actions_for(client, uri, [verdict])
    by_title = {a.title: a for a in actions}
    assert set(by_title) == {"Open trace in Perfetto", "Re-profile fn"}
    trace = by_title["Open trace in Perfetto"]
    assert trace.kind == types.CodeActionKind.QuickFix and trace.command is not None
    assert trace.command.command == "torchscope.openTrace"
    assert list(trace.command.arguments or ()) == [{"path": result["report"]["trace_path"]}]
    assert Path(result["report"]["trace_path"]).is_file()
    again = by_title["Re-profile fn"].command
    assert again is not None and again.command == "torchscope.profileFunction"
    assert list(again.arguments or ()) == [{"uri": uri, "line": line}]

    # Only what was asked for; nothing for other tools' diagnostics.
    assert await actions_for(client, uri, [verdict], only=[types.CodeActionKind.Refactor]) == []
    foreign = types.Diagnostic(range=verdict.range, message="E501", source="ruff")
    assert await actions_for(client, uri, [foreign]) == []


async def test_failure_offers_reprofile_only(client: LanguageClient) -> None:
    uri = MATMUL.as_uri()
    line = def_line(MATMUL, "fn")
    result, diagnostics = await profile_and_wait(
        client, {"uri": uri, "line": line, "call": "fn(torch.randn(8, 8))"}
    )
    assert not result["ok"]
    [error] = [d for d in diagnostics if d.severity == types.DiagnosticSeverity.Error]
    actions = await actions_for(client, uri, [error])
    assert [a.title for a in actions] == ["Re-profile fn"]
