"""``torchscope.profileInRun`` over real LSP: the real server runs ``examples/real_inputs``'
training script in its worker and publishes the profile of ``Attention.forward`` on the
arguments the script passed it; a program that never calls the function is one error message,
and the server keeps serving."""

from __future__ import annotations

import asyncio
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from pytest_lsp import LanguageClient

from tests.conftest import EXAMPLES
from tests.lsp.test_profile_command import def_line

pytestmark = pytest.mark.asyncio(loop_scope="module")

TRAIN = EXAMPLES / "real_inputs" / "train.py"


def copy_of_train(tmp_path: Path) -> Path:
    """The example in its own folder: the capture goes under it, not under the repository."""
    return Path(shutil.copy(TRAIN, tmp_path / "train.py"))


async def profile_in_run(
    client: LanguageClient, args: dict[str, Any], token: str | None = None
) -> tuple[Any, list[types.Diagnostic]]:
    """The command, with the diagnostics wait armed before it is sent."""
    if token is not None:
        client.progress_reports.setdefault(token, [])
    waiting = asyncio.ensure_future(
        client.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    )
    params = types.ExecuteCommandParams(
        command="torchscope.profileInRun", arguments=[args], work_done_token=token
    )
    result = await asyncio.wait_for(client.workspace_execute_command_async(params), 120)
    if not result.get("ok") and "kind" not in result:  # refused arguments publish nothing
        waiting.cancel()
        return result, []
    await asyncio.wait_for(waiting, 60)
    return result, list(client.diagnostics[args["uri"]])


async def test_profile_in_run_publishes_the_verdict_and_reports_the_calls(
    client: LanguageClient, tmp_path: Path
) -> None:
    train = copy_of_train(tmp_path)
    uri = train.as_uri()
    line = def_line(train, "forward")  # Attention.forward, the first forward in the file
    entry = [sys.executable, str(train), "--steps", "4"]
    result, diagnostics = await profile_in_run(
        client,
        {"uri": uri, "qualname": "Attention.forward", "entry": entry, "calls": 2, "capture": True},
        token="tok-run",
    )
    assert result["ok"], result
    report = result["report"]
    assert report["target"]["qualname"] == "Attention.forward"
    run = report["run"]
    assert run["exit"] == "stopped" and run["calls_seen"] == 2, run
    assert run["capture"]["written"] is True and report["inputs"]["source"] == "run"
    capture = tmp_path / ".torchscope" / "inputs" / "train" / "Attention.forward.pt"
    assert report["inputs"]["path"] == str(capture) and capture.is_file()
    [verdict] = [d for d in diagnostics if d.source == "torchscope" and d.range.start.line == line]
    assert verdict.severity != types.DiagnosticSeverity.Error, verdict.message
    assert verdict.message.startswith(report["verdict"]["headline"])
    reports = client.progress_reports["tok-run"]
    assert isinstance(reports[0], types.WorkDoneProgressBegin)
    assert "Attention.forward" in (reports[0].title or "")
    said = [r.message or "" for r in reports if isinstance(r, types.WorkDoneProgressReport)]
    waiting = [i for i, m in enumerate(said) if "waiting for the first call" in m]
    seen = [i for i, m in enumerate(said) if m.endswith("calls seen: 2 of 2")]
    assert waiting and seen and waiting[0] < seen[0], said
    assert len(said) > seen[0] + 1, said  # then the profile's passes
    assert isinstance(reports[-1], types.WorkDoneProgressEnd)

    # The same by line, on the cursor's line inside the body; a program that never calls it.
    shown = len(client.messages)
    never = f"python {train} --steps 0"  # a command line, not words
    result, diagnostics = await profile_in_run(
        client, {"uri": uri, "line": line + 2, "entry": never, "calls": 2}
    )
    assert not result["ok"] and result["kind"] == "not-called", result
    assert "finished with exit code 0 before calling Attention.forward" in result["error"]
    errors = [m for m in client.messages[shown:] if m.type == types.MessageType.Error]
    assert len(errors) == 1 and "before calling Attention.forward" in errors[0].message
    [error] = [d for d in diagnostics if d.range.start.line == line]
    assert error.severity == types.DiagnosticSeverity.Error


async def test_bad_entry_is_one_message_and_the_server_keeps_serving(
    client: LanguageClient, tmp_path: Path
) -> None:
    train = copy_of_train(tmp_path)
    uri = train.as_uri()
    for args, said in [
        ({"uri": uri, "qualname": "Attention.forward", "entry": 3}, "'entry' must be the program"),
        ({"uri": uri, "qualname": "Nope.forward", "entry": "python x.py"}, "no function 'Nope"),
        ({"uri": uri, "line": 50, "entry": "python missing.py"}, "missing.py: no such script"),
    ]:
        shown = len(client.messages)
        result, _ = await profile_in_run(client, args)
        assert not result["ok"] and said in result["error"], result
        [message] = client.messages[shown:]
        assert message.type == types.MessageType.Error and said in message.message
    hover = await client.text_document_hover_async(
        types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            position=types.Position(line=0, character=0),
        )
    )
    assert hover is None  # still answering
