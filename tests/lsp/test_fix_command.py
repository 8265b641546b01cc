"""**Try fix: … (measure)** over real LSP: the code action, ``torchscope.tryFix`` measured in
the real worker, Apply answered through ``window/showMessageRequest`` and the edit sent as
``workspace/applyEdit``; a rewrite that changes the outputs is refused and never offered."""

from __future__ import annotations

import asyncio
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from pytest_lsp import LanguageClient

from tests.conftest import FIXTURES
from tests.lsp.test_code_actions import fix_code_action_parsing
from tests.lsp.test_profile_command import def_line

pytestmark = [pytest.mark.asyncio(loop_scope="module"), pytest.mark.slow]

TITLE = "Try fix: zero_grad(set_to_none=True) (measure)"


class Editor:
    """The client's side of Apply / Discard: answers the question, records the edit."""

    def __init__(self, client: LanguageClient) -> None:
        self.questions: list[types.ShowMessageRequestParams] = []
        self.edits: asyncio.Queue[types.ApplyWorkspaceEditParams] = asyncio.Queue()

        @client.feature(types.WINDOW_SHOW_MESSAGE_REQUEST)
        def ask(params: types.ShowMessageRequestParams) -> types.MessageActionItem:
            self.questions.append(params)
            return types.MessageActionItem(title="Apply")

        @client.feature(types.WORKSPACE_APPLY_EDIT)
        def apply(params: types.ApplyWorkspaceEditParams) -> types.ApplyWorkspaceEditResult:
            self.edits.put_nowait(params)
            return types.ApplyWorkspaceEditResult(applied=True)


async def try_fix(client: LanguageClient, args: dict[str, Any]) -> Any:
    params = types.ExecuteCommandParams(command="torchscope.tryFix", arguments=[args])
    return await asyncio.wait_for(client.workspace_execute_command_async(params), 300)


async def test_try_fix_measures_then_apply_edits_the_function(
    client: LanguageClient, tmp_path: Path
) -> None:
    file = Path(shutil.copy(FIXTURES / "fix_samples.py", tmp_path / "fix_samples.py"))
    uri, text = file.as_uri(), file.read_text()
    editor = Editor(client)
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(
                uri=uri, language_id="python", version=1, text=text
            )
        )
    )
    line = def_line(file, "train_step")
    fix_code_action_parsing(client)
    actions = await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            range=types.Range(
                types.Position(line=line + 1, character=4),
                types.Position(line=line + 1, character=4),
            ),
            context=types.CodeActionContext(diagnostics=[]),
        )
    )
    by_title = {a.title: a for a in actions or [] if isinstance(a, types.CodeAction)}
    assert TITLE in by_title, list(by_title)
    command = by_title[TITLE].command
    assert command is not None and command.command == "torchscope.tryFix"
    args = {**command.arguments[0], "timing_budget_s": 1.0, "warmup": 1}  # type: ignore[index]

    result = await try_fix(client, args)
    assert result["ok"] and result["offered"], result
    trial = result["fix"]
    assert trial["verdict"] == "faster" and trial["same_outputs"] is True, trial
    edit = await asyncio.wait_for(editor.edits.get(), 30)
    [question] = editor.questions
    assert question.message.startswith("torchscope: train_step: measured ")
    # issue 54: one phrase, one direction, one pair of parentheses
    faster = r"measured [\d.]+× faster \([\d.]+×–[\d.]+× faster\), same outputs"
    assert re.search(faster, question.message), question.message
    assert result["fix"]["comparison"]["decision"] == "faster", result["fix"]
    # What was checked and what the fix assumes, on the measured line (issue 39).
    assert "· checked: outputs, requires_grad, grads" in question.message, question.message
    assert question.message.endswith(f"· assumes: {trial['assumes']}"), question.message
    assert [a.title for a in question.actions or []] == ["Apply", "Discard"]
    [change] = edit.edit.changes[uri]  # type: ignore[index]
    rewritten = text.replace("set_to_none=False)\n    loss", "set_to_none=True)\n    loss")
    lines = text.splitlines(keepends=True)
    start, end = change.range.start.line, change.range.end.line
    assert start == line and change.range.start.character == 0  # the function's lines
    assert "".join(lines[:start]) + change.new_text + "".join(lines[end:]) == rewritten
    assert file.read_text() == text  # the server edits the buffer, never the file

    # The zero-grad-none rewrite of a function that returns the zeroed gradient: refused.
    refused = await try_fix(
        client,
        {
            "uri": uri,
            "line": def_line(file, "zeroed_grad"),
            "fix": "zero-grad-none",
            "timing_budget_s": 0.5,
            "warmup": 1,
        },
    )
    assert refused["ok"] and not refused["offered"], refused
    assert refused["fix"]["refused"] == "changes the outputs"
    said = [m.message for m in client.messages if "zeroed_grad" in m.message]
    assert said and "not offered: it changes the outputs · checked: outputs" in said[-1], said
    assert len(editor.questions) == 1 and editor.edits.empty()

    broken = tmp_path / "broken.py"
    broken.write_text(text.replace("def train_step(model, x):", "def train_step(model, x)"))
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(
                uri=broken.as_uri(), language_id="python", version=1, text=broken.read_text()
            )
        )
    )
    at = types.Position(line=line + 1, character=4)
    none = await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=broken.as_uri()),
            range=types.Range(at, at),
            context=types.CodeActionContext(diagnostics=[]),
        )
    )
    assert not none  # a syntax error while typing: no fix, and no error

    unknown = await try_fix(client, {"uri": uri, "line": line, "fix": "nope"})
    assert not unknown["ok"] and "'fix' must be a fix id" in unknown["error"]
    not_here = await try_fix(
        client, {"uri": uri, "line": def_line(file, "no_attention"), "fix": "sdpa"}
    )
    assert not not_here["ok"] and "does not apply to no_attention" in not_here["error"]
