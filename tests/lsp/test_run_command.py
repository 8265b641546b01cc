"""``torchscope.profileInRun`` over real LSP: the real server runs ``examples/real_inputs``'
training script in its worker and publishes the profile of ``Attention.forward`` on the
arguments the script passed it; a program that never calls the function is one error message,
and the server keeps serving. The capture it makes brings the **Profile with captured inputs**
lens, whose profile replays it."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from pytest_lsp import LanguageClient

from tests.conftest import EXAMPLES
from tests.lsp.test_profile_command import def_line, profile_and_wait
from tests.reliability.lsp_helpers import command_and_diagnostics

pytestmark = pytest.mark.asyncio(loop_scope="module")

TRAIN = EXAMPLES / "real_inputs" / "train.py"
FAST = {"timing_budget_s": 0.3}


def copy_of_train(tmp_path: Path) -> Path:
    """The example in its own folder: the capture goes under it, not under the repository."""
    return Path(shutil.copy(TRAIN, tmp_path / "train.py"))


async def profile_in_run(
    client: LanguageClient, args: dict[str, Any], token: str | None = None
) -> tuple[Any, list[types.Diagnostic]]:
    return await command_and_diagnostics(client, "torchscope.profileInRun", args, token)


async def capture_lenses(client: LanguageClient, uri: str) -> list[types.CodeLens]:
    lenses = await client.text_document_code_lens_async(
        types.CodeLensParams(text_document=types.TextDocumentIdentifier(uri=uri))
    )
    return [
        lens
        for lens in lenses or []
        if lens.command and lens.command.title.startswith("Profile with captured inputs")
    ]


async def test_profile_in_run_publishes_the_verdict_and_reports_the_calls(
    client: LanguageClient, tmp_path: Path
) -> None:
    train = copy_of_train(tmp_path)
    uri = train.as_uri()
    line = def_line(train, "forward")  # Attention.forward, the first forward in the file
    entry = [sys.executable, str(train), "--steps", "4"]
    assert await capture_lenses(client, uri) == []  # no capture yet
    result, diagnostics = await profile_in_run(
        client,
        {"uri": uri, "qualname": "Attention.forward", "entry": entry, "calls": 2, "capture": True}
        | FAST,
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

    # The capture's lens names the program and its age, and replays the capture.
    [lens] = await capture_lenses(client, uri)
    assert lens.command is not None and lens.range.start.line == line
    title = lens.command.title
    assert title.startswith("Profile with captured inputs (train.py, ") and title.endswith(" ago)")
    assert lens.command.command == "torchscope.profileFunction"
    argument = lens.command.arguments[0]  # type: ignore[index]
    assert argument == {"uri": uri, "line": line, "replay": True}
    replayed, _ = await profile_and_wait(client, argument | FAST)
    assert replayed["ok"], replayed
    inputs = replayed["report"]["inputs"]
    assert inputs["source"] == "capture" and inputs["path"] == str(capture), inputs

    # torchscope.sweep with name "batch" and no call: the capture at other batch sizes.
    params = types.ExecuteCommandParams(
        command="torchscope.sweep",
        arguments=[{"uri": uri, "line": line, "name": "batch", "sizes": [4, 32]} | FAST],
    )
    swept = await client.workspace_execute_command_async(params)
    assert swept["ok"], swept
    assert [p["N"] for p in swept["sweep"]["points"]] == [4, 32], swept["sweep"]
    assert swept["sweep"]["captured_batch"] == 16
    assert swept["report"]["inputs"]["batch"] == 32


async def test_failures_are_one_message_and_the_server_keeps_serving(
    client: LanguageClient, tmp_path: Path
) -> None:
    train = copy_of_train(tmp_path)
    uri, line = train.as_uri(), def_line(train, "forward")
    for args, said in [
        ({"uri": uri, "qualname": "Attention.forward", "entry": 3}, "'entry' must be the program"),
        ({"uri": uri, "qualname": "Nope.forward", "entry": "python x.py"}, "no function 'Nope"),
        ({"uri": uri, "line": line, "entry": "python missing.py"}, "missing.py: no such script"),
        (
            {"uri": uri, "line": line, "entry": "python train.py", "cwd": str(tmp_path / "nope")},
            "nope: no such folder",
        ),
    ]:
        shown = len(client.messages)
        result, _ = await profile_in_run(client, args)
        assert not result["ok"] and said in result["error"], result
        [message] = client.messages[shown:]
        assert message.type == types.MessageType.Error and said in message.message
    # By line, on a line inside the body: a program that never calls the function.
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
    hover = await client.text_document_hover_async(
        types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            position=types.Position(line=0, character=0),
        )
    )
    assert hover is None  # still answering


CWD_PROGRAM = """\
import sys
import torch


def scale(x, factor):
    return (x * factor).sum()


size = int(open(sys.argv[1]).read())  # relative: found only in the program's cwd
for _ in range(2):
    scale(torch.ones(size), 2.0)
"""


async def test_the_program_runs_in_the_launch_configurations_cwd(
    client: LanguageClient, tmp_path: Path
) -> None:
    """``cwd`` (a launch configuration's): the script and the file its argument names are
    relative paths that resolve only there (the workspace root is the repository)."""
    folder = tmp_path / "run"
    folder.mkdir()
    (folder / "main.py").write_text(CWD_PROGRAM)
    (folder / "size.txt").write_text("64\n")
    uri = (folder / "main.py").as_uri()
    args = {"uri": uri, "qualname": "scale", "entry": "python main.py size.txt", "calls": 2}
    result, _ = await profile_in_run(client, args | {"cwd": str(folder)} | FAST)
    assert result["ok"], result
    run = result["report"]["run"]
    assert run["exit"] == "stopped" and run["calls_seen"] == 2, run
    assert run["entry"] == "python main.py size.txt"
