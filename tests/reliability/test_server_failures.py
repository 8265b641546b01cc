"""Every failure through the real server: one message on the def line, naming what happened and
what to do; the server keeps serving and the next profile works; nothing is left running."""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient

from tests.conftest import REPO
from tests.reliability.cases import def_line
from tests.reliability.conftest import ENV, TORCHSCOPE, marked_processes
from tests.reliability.lsp_helpers import error_on, good_profile_works, profile

pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest_lsp.fixture(
    scope="module",
    config=ClientServerConfig(server_command=[*TORCHSCOPE, "serve"], server_env=ENV),
)
async def client(lsp_client: LanguageClient, tmp_path_factory) -> AsyncIterator[None]:
    await lsp_client.initialize_session(
        types.InitializeParams(
            capabilities=types.ClientCapabilities(
                window=types.WindowClientCapabilities(work_done_progress=True)
            ),
            root_uri=REPO.as_uri(),
            initialization_options={
                "settings": {
                    "steps": 2,
                    "warmup": 1,
                    "timeout_s": 60,
                    "trace_dir": str(tmp_path_factory.mktemp("traces")),
                }
            },
        )
    )
    yield
    await lsp_client.shutdown_session()


async def fails_with(
    client: LanguageClient, cases: Path, name: str, kind: str, *needles: str, **overrides: object
) -> types.Diagnostic:
    result, diagnostics = await profile(client, cases, name, **overrides)
    assert not result["ok"] and result["kind"] == kind, result
    diagnostic = error_on(diagnostics, cases, name)
    assert diagnostic.code == kind
    for needle in needles:
        assert needle in diagnostic.message, diagnostic.message
    await good_profile_works(client, cases)
    return diagnostic


async def test_syntax_error(client: LanguageClient, tmp_path: Path, cases: Path) -> None:
    broken = tmp_path / "broken.py"
    broken.write_text("import torch\n\ndef fn():\n    return torch.ones(2) +\n")
    result, diagnostics = await profile(client, broken, "fn")
    assert not result["ok"]
    [diagnostic] = diagnostics
    assert "invalid syntax" in diagnostic.message or "SyntaxError" in diagnostic.message
    await good_profile_works(client, cases)


async def test_import_error(client: LanguageClient, tmp_path: Path, cases: Path) -> None:
    broken = tmp_path / "imports.py"
    broken.write_text("import torch\nimport no_such_module_xyz\n\ndef fn():\n    return 1\n")
    result, diagnostics = await profile(client, broken, "fn")
    assert result["kind"] == "import", result
    assert any("no_such_module_xyz" in d.message for d in diagnostics)
    await good_profile_works(client, cases)


async def test_call_expression_invalid_and_raising(client: LanguageClient, cases: Path) -> None:
    await fails_with(client, cases, "good", "call-invalid", "not valid Python", call="good(")
    await fails_with(client, cases, "good", "call-raised", "ZeroDivisionError", call="good(1 / 0)")


async def test_function_raises(client: LanguageClient, cases: Path) -> None:
    await fails_with(client, cases, "raises", "call-raised", "ValueError: bad value 42")


async def test_sys_exit_is_a_job_error_not_a_dead_worker(
    client: LanguageClient, cases: Path
) -> None:
    await fails_with(client, cases, "calls_exit", "call-raised", "sys.exit(3)", "return instead")


async def test_os_exit_names_the_exit_code(client: LanguageClient, cases: Path) -> None:
    await fails_with(client, cases, "calls_os_exit", "worker", "exited with code 7", "os._exit")


async def test_segfault_names_the_signal_and_quotes_stderr(
    client: LanguageClient, cases: Path
) -> None:
    diagnostic = await fails_with(
        client, cases, "segfault", "worker", "SIGSEGV (segmentation fault) in native code"
    )
    assert "Fatal Python error: Segmentation fault" in diagnostic.message  # faulthandler's


async def test_crash_with_a_child_holding_stderr_is_a_crash_not_a_timeout(
    client: LanguageClient, cases: Path
) -> None:
    started = time.monotonic()
    await fails_with(client, cases, "child_then_crash", "worker", "SIGSEGV", timeout_s=30)
    assert time.monotonic() - started < 25  # reported at once, not after the 30 s timeout


async def test_infinite_loop_stops_within_the_timeout(client: LanguageClient, cases: Path) -> None:
    started = time.monotonic()
    result, diagnostics = await profile(client, cases, "spins", timeout_s=3)
    elapsed = time.monotonic() - started
    assert result["kind"] == "timeout", result
    assert "did not finish within 3 s" in error_on(diagnostics, cases, "spins").message
    assert elapsed < 3 + 1 + 1.5, elapsed  # timeout + 1 s, plus the round trip on a busy box
    await good_profile_works(client, cases)


async def test_memory_blow_up_is_stopped_at_the_limit(client: LanguageClient, cases: Path) -> None:
    await fails_with(
        client, cases, "eats_memory", "memory", "(limit 1.0 GB)", "stopped at", max_memory="1G"
    )


async def test_20_mb_of_output_is_capped(client: LanguageClient, cases: Path) -> None:
    before = len(client.log_messages)
    result, _ = await profile(client, cases, "prints_20mb")
    assert result["ok"], result
    logged = [m.message for m in client.log_messages[before:]]
    total = sum(len(m) for m in logged)
    assert total < 1024 * 1024, total  # 256 KiB forwarded, not 20 MB (or 40)
    # Every call prints 20 MB, so a job (cold + warmup + timing + profile calls) prints more:
    # hundreds of MB, or GB when the timing pass takes more samples within its budget.
    notes = [m for m in logged if re.search(r"\d+\.\d [MG]B more output not shown", m)]
    assert len(notes) == 1, [m[:200] for m in logged]
    await good_profile_works(client, cases)


async def test_reading_stdin_says_stdin_is_dev_null(client: LanguageClient, cases: Path) -> None:
    await fails_with(client, cases, "reads_stdin", "call-raised", "stdin is /dev/null")


async def test_children_are_killed_after_a_successful_job(
    client: LanguageClient, cases: Path
) -> None:
    result, _ = await profile(client, cases, "starts_children")
    assert result["ok"], result
    # Right away, not eventually: the job's end kills its descendants, setsid'd and
    # SIGTERM-ignoring ones included.
    assert marked_processes() == []


async def test_async_and_generator_functions_run(client: LanguageClient, cases: Path) -> None:
    for name in ("coroutine", "generator"):
        result, _ = await profile(client, cases, name)
        assert result["ok"], result
        report = result["report"]
        assert report["verdict"]["id"] != "no-activity", report["verdict"]
        assert any(op["name"] == "aten::mm" for op in report["top_ops"]), report["top_ops"]
    # a generator's lines are not attributed, and the report says so
    assert "generator" in report["attribution_note"], report["attribution_note"]


async def test_not_inside_a_function_is_cleared_by_a_later_profile(
    client: LanguageClient, cases: Path
) -> None:
    uri = cases.as_uri()
    args = {"uri": uri, "line": 0}
    waiting = asyncio.ensure_future(
        client.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    )
    result = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command="torchscope.profile", arguments=[args])
    )
    await waiting
    assert not result["ok"]
    assert any("not inside a function" in d.message for d in client.diagnostics[uri])
    await good_profile_works(client, cases)
    assert not any("not inside a function" in d.message for d in client.diagnostics[uri])


async def test_requests_queue_and_say_what_they_wait_for(
    client: LanguageClient, cases: Path
) -> None:
    def request(name: str, token: str) -> asyncio.Future[dict[str, object]]:
        client.progress_reports.setdefault(token, [])
        args = {"uri": cases.as_uri(), "line": def_line(cases, name) + 1}
        params = types.ExecuteCommandParams(
            command="torchscope.profile", arguments=[args], work_done_token=token
        )
        return asyncio.ensure_future(client.workspace_execute_command_async(params))

    first = request("slow", "q-first")
    await asyncio.sleep(0.5)
    second = request("good", "q-second")
    first_result, second_result = await asyncio.wait_for(asyncio.gather(first, second), 120)
    assert first_result["ok"] and second_result["ok"]
    messages = [
        r.message
        for r in client.progress_reports["q-second"]
        if isinstance(r, types.WorkDoneProgressReport)
    ]
    assert "waiting for the job on `slow`" in messages, messages


async def test_closed_document_gets_no_diagnostics(client: LanguageClient, cases: Path) -> None:
    uri = cases.as_uri()
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(types.TextDocumentItem(uri, "python", 1, cases.read_text()))
    )
    args = {"uri": uri, "line": def_line(cases, "slow") + 1}
    request = asyncio.ensure_future(
        client.workspace_execute_command_async(
            types.ExecuteCommandParams(command="torchscope.profile", arguments=[args])
        )
    )
    await asyncio.sleep(1.0)
    client.text_document_did_close(
        types.DidCloseTextDocumentParams(types.TextDocumentIdentifier(uri))
    )
    unpublished: list[types.Diagnostic] = []
    client.diagnostics[uri] = unpublished  # replaced by any publish for this document
    result = await asyncio.wait_for(request, 120)
    assert result["ok"], result
    await asyncio.sleep(0.5)
    assert client.diagnostics[uri] is unpublished
    # reopened unchanged: the result that finished while it was closed is shown now
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(types.TextDocumentItem(uri, "python", 2, cases.read_text()))
    )
    for _ in range(100):
        if client.diagnostics[uri] is not unpublished:
            break
        await asyncio.sleep(0.1)
    assert client.diagnostics[uri] is not unpublished, "not published on reopen"
    client.text_document_did_close(
        types.DidCloseTextDocumentParams(types.TextDocumentIdentifier(uri))
    )
