"""``torchscope.profile`` end to end: real client, real server, real worker, real torch."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from pytest_lsp import LanguageClient

from tests.conftest import EXAMPLES, FIXTURES
from torchscope.analysis.results import VERDICT_IDS
from torchscope.analysis.verdict.causes import CAUSES

pytestmark = pytest.mark.asyncio(loop_scope="module")

MATMUL = EXAMPLES / "matmul_add.py"
SMALL = "fn(torch.randn(8, 8), torch.randn(8, 8), torch.randn(8, 8))"


def def_line(path: Path, name: str) -> int:
    """0-based line of ``def name``."""
    for index, line in enumerate(path.read_text().splitlines()):
        if line.lstrip().startswith(f"def {name}("):
            return index
    raise AssertionError(f"no def {name} in {path}")


async def execute(
    client: LanguageClient,
    args: dict[str, Any],
    token: str | None = None,
    msg_id: str | None = None,
) -> Any:
    if token is not None:  # a client-made token needs no create request; tell pytest-lsp
        client.progress_reports.setdefault(token, [])
    params = types.ExecuteCommandParams(
        command="torchscope.profile", arguments=[args], work_done_token=token
    )
    if msg_id is None:
        return await client.workspace_execute_command_async(params)
    return await client.protocol.send_request_async(
        types.WORKSPACE_EXECUTE_COMMAND, params, msg_id=msg_id
    )


async def profile_and_wait(
    client: LanguageClient, args: dict[str, Any], token: str | None = None
) -> tuple[Any, list[types.Diagnostic]]:
    """Send the command with the diagnostics wait already armed, so none can be missed."""
    waiting = asyncio.ensure_future(
        client.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    )
    result = await execute(client, args, token)
    await asyncio.wait_for(waiting, 60)
    return result, list(client.diagnostics[args["uri"]])


async def test_profile_publishes_the_verdict_on_the_def_line(client: LanguageClient) -> None:
    uri = MATMUL.as_uri()
    line = def_line(MATMUL, "fn")
    result, diagnostics = await profile_and_wait(
        client, {"uri": uri, "line": line + 1, "call": SMALL}, token="tok-small"
    )
    assert result["ok"], result
    [diagnostic] = [d for d in diagnostics if d.source == "torchscope"]
    assert diagnostic.code == "overhead-bound"
    verdict = result["report"]["verdict"]
    # The headline, then the cause the verdict names and its share of the call (issue 30).
    assert diagnostic.message.startswith(verdict["headline"] + f" · cause: {verdict['cause']} (")
    assert verdict["cause"] in CAUSES and diagnostic.message.endswith(" of the call)")
    assert diagnostic.message.startswith("overhead-bound")
    assert diagnostic.range.start.line == line
    assert diagnostic.severity == types.DiagnosticSeverity.Warning
    reports = client.progress_reports["tok-small"]
    assert isinstance(reports[0], types.WorkDoneProgressBegin)
    assert isinstance(reports[-1], types.WorkDoneProgressEnd)
    assert [r.message for r in reports if isinstance(r, types.WorkDoneProgressReport)]
    assert Path(result["report"]["trace_path"]).is_file()


async def test_directive_is_used_without_a_call(client: LanguageClient) -> None:
    uri = MATMUL.as_uri()
    result, _ = await profile_and_wait(client, {"uri": uri, "line": def_line(MATMUL, "fn")})
    assert result["ok"], result
    assert result["report"]["call"] == SMALL
    assert result["report"]["target"] == {
        "file": str(MATMUL),
        "qualname": "fn",
        "line": def_line(MATMUL, "fn") + 1,
    }


async def test_bad_call_is_an_error_and_the_server_keeps_serving(client: LanguageClient) -> None:
    uri = MATMUL.as_uri()
    line = def_line(MATMUL, "fn")
    shown = len(client.messages)
    result, diagnostics = await profile_and_wait(
        client, {"uri": uri, "line": line, "call": "fn(torch.randn(8, 8))"}
    )
    assert not result["ok"] and "missing" in result["error"]
    [error] = [d for d in diagnostics if d.source == "torchscope"]
    assert error.severity == types.DiagnosticSeverity.Error
    assert error.range.start.line == line and "raised TypeError" in error.message
    assert any(m.type == types.MessageType.Error for m in client.messages[shown:])
    result, diagnostics = await profile_and_wait(client, {"uri": uri, "line": line, "call": SMALL})
    assert result["ok"]
    # The error is replaced by the verdict (whichever it is on a loaded machine).
    [verdict] = [d for d in diagnostics if d.source == "torchscope"]
    assert verdict.severity != types.DiagnosticSeverity.Error and verdict.code in VERDICT_IDS


async def test_missing_call_expression_and_non_function_line(
    client: LanguageClient, tmp_path: Path
) -> None:
    module = tmp_path / "needs.py"
    module.write_text("import torch\n\n\ndef needs(x, w):\n    return x @ w\n")
    result, diagnostics = await profile_and_wait(client, {"uri": module.as_uri(), "line": 4})
    assert not result["ok"] and result["kind"] == "call-missing"
    assert "# torchscope: needs(x=…, w=…)" in result["error"]
    assert diagnostics[0].range.start.line == 3
    result, _ = await profile_and_wait(client, {"uri": module.as_uri(), "line": 0})
    assert not result["ok"] and "not inside a function" in result["error"]


async def test_syntax_error_is_reported_on_its_line(client: LanguageClient, tmp_path: Path) -> None:
    module = tmp_path / "broken.py"
    module.write_text("import torch\n\ndef f(:\n    return 1\n")
    result, diagnostics = await profile_and_wait(client, {"uri": module.as_uri(), "line": 3})
    assert not result["ok"] and "syntax error" in result["error"]
    assert diagnostics[0].severity == types.DiagnosticSeverity.Error
    assert diagnostics[0].range.start.line == 2


async def test_user_exception_points_at_the_raising_line(
    client: LanguageClient, tmp_path: Path
) -> None:
    samples = tmp_path / "samples.py"
    shutil.copy(FIXTURES / "samples.py", samples)
    line = def_line(samples, "raises")
    result, diagnostics = await profile_and_wait(
        client, {"uri": samples.as_uri(), "line": line, "call": "raises(1)"}
    )
    assert not result["ok"] and "boom from user code" in result["error"]
    assert diagnostics[0].range.start.line == line + 1


async def test_cancel_request_kills_the_job(client: LanguageClient, tmp_path: Path) -> None:
    samples = tmp_path / "samples.py"
    shutil.copy(FIXTURES / "samples.py", samples)
    args = {"uri": samples.as_uri(), "line": def_line(samples, "slow"), "call": "slow(1)"}
    pending = asyncio.ensure_future(execute(client, args, token="tok-slow", msg_id="slow-1"))
    while not any(
        isinstance(r, types.WorkDoneProgressReport) and "first call" in (r.message or "")
        for r in client.progress_reports.get("tok-slow", [])
    ):
        await asyncio.sleep(0.05)
    client.protocol.notify(types.CANCEL_REQUEST, types.CancelParams(id="slow-1"))
    with pytest.raises(Exception, match="cancel"):
        await asyncio.wait_for(pending, 30)
    reports = client.progress_reports["tok-slow"]
    await asyncio.sleep(0)  # the end notification follows the cancellation
    # The next job runs in a fresh worker and succeeds.
    result, _ = await profile_and_wait(
        client, {"uri": MATMUL.as_uri(), "line": def_line(MATMUL, "fn"), "call": SMALL}
    )
    assert result["ok"]
    assert isinstance(reports[-1], types.WorkDoneProgressEnd) and reports[-1].message == "cancelled"


async def test_progress_cancel_button_kills_the_job(client: LanguageClient, tmp_path: Path) -> None:
    samples = tmp_path / "samples.py"
    shutil.copy(FIXTURES / "samples.py", samples)
    args = {"uri": samples.as_uri(), "line": def_line(samples, "slow"), "call": "slow(1)"}
    pending = asyncio.ensure_future(execute(client, args, token="tok-button"))
    while not any(
        isinstance(r, types.WorkDoneProgressReport) and "first call" in (r.message or "")
        for r in client.progress_reports.get("tok-button", [])
    ):
        await asyncio.sleep(0.05)
    client.protocol.notify(
        types.WINDOW_WORK_DONE_PROGRESS_CANCEL,
        types.WorkDoneProgressCancelParams(token="tok-button"),
    )
    result = await asyncio.wait_for(pending, 30)
    assert result == {"ok": False, "error": "cancelled"}


async def test_target_request_describes_the_function(client: LanguageClient) -> None:
    uri = MATMUL.as_uri()
    await asyncio.sleep(0)
    target = await client.protocol.send_request_async(
        "torchscope/target", {"uri": uri, "line": def_line(MATMUL, "fn") + 1}
    )
    # pygls' client turns an untyped result into attribute objects
    assert target.qualname == "fn" and target.needs_call is True
    assert target.line == def_line(MATMUL, "fn")
    assert [p.name for p in target.params] == ["x", "w", "b"]
    assert target.directive == SMALL


async def test_bad_arguments_get_a_clear_message(client: LanguageClient) -> None:
    result = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(
            command="torchscope.profile", arguments=[{"uri": "untitled:1", "line": 0}]
        )
    )
    assert not result["ok"] and "file: URI" in result["error"]


async def test_analyze_trace_command(client: LanguageClient, tmp_path: Path) -> None:
    from tests.conftest import SHARED_TRACES

    trace = SHARED_TRACES / "kineto_resnet50_train_workers0_v100.json.gz"
    result = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(
            command="torchscope.analyzeTrace", arguments=[{"path": str(trace)}]
        )
    )
    assert result["ok"] and result["report"]["verdict"]["id"] == "input-bound"
    bogus = tmp_path / "notes.json"
    bogus.write_text("[1, 2")
    shown = len(client.messages)
    result = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(
            command="torchscope.analyzeTrace", arguments=[{"path": str(bogus)}]
        )
    )
    assert not result["ok"] and "notes.json" in result["error"]
    assert any("notes.json" in m.message for m in client.messages[shown:])


async def test_the_profilers_chatter_stays_out_of_the_log(client: LanguageClient) -> None:
    """torch's USDT lines, and one the profiled function writes to fd 2 as the C++ side does,
    are not in the editor's log (the job's log keeps them: ``torchscope/chatter.py``)."""
    path = FIXTURES / "run_words" / "model.py"
    before = len(client.log_messages)
    result, _ = await profile_and_wait(
        client, {"uri": path.as_uri(), "line": def_line(path, "chatty") + 1, "call": "chatty(1.0)"}
    )
    assert result["ok"], result
    await asyncio.sleep(0.5)  # stderr is read apart from the reply: give it time to arrive
    logged = [m.message for m in client.log_messages[before:]]
    assert not [m for m in logged if "USDT:" in m or "profiler_start" in m], logged
