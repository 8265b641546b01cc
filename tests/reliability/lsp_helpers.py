"""Driving the real server through pytest-lsp for the reliability tests."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from lsprotocol import types
from pytest_lsp import LanguageClient

from tests.reliability.cases import def_line


async def profile(
    client: LanguageClient,
    path: Path,
    name: str,
    token: str | None = None,
    wait_s: float = 120,
    **overrides: Any,
) -> tuple[dict[str, Any], list[types.Diagnostic]]:
    """Profile ``name`` in ``path``; the result and the diagnostics published for it. The wait
    for diagnostics is armed before the request: the server may publish before it answers."""
    uri = path.as_uri()
    args = {"uri": uri, "line": def_line(path, name) + 1, **overrides}
    return await command_and_diagnostics(client, "torchscope.profile", args, token, wait_s)


async def command_and_diagnostics(
    client: LanguageClient,
    command: str,
    args: dict[str, Any],
    token: str | None = None,
    wait_s: float = 120,
) -> tuple[dict[str, Any], list[types.Diagnostic]]:
    """Run a job command on ``args["uri"]``; its answer and the diagnostics published for that
    document. The wait for them is armed before the request (the server may publish before it
    answers); refused arguments publish nothing (an answer not ok, with no failure ``kind``)."""
    if token is not None:
        client.progress_reports.setdefault(token, [])
    waiting = asyncio.ensure_future(
        client.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    )
    params = types.ExecuteCommandParams(command=command, arguments=[args], work_done_token=token)
    result = await asyncio.wait_for(client.workspace_execute_command_async(params), wait_s)
    if not result.get("ok") and "kind" not in result:
        waiting.cancel()
        return result, []
    await asyncio.wait_for(waiting, 60)
    return result, list(client.diagnostics[args["uri"]])


def error_on(diagnostics: list[types.Diagnostic], path: Path, name: str) -> types.Diagnostic:
    """The one error diagnostic inside function ``name``."""
    start = def_line(path, name)
    errors = [
        d
        for d in diagnostics
        if d.severity == types.DiagnosticSeverity.Error and d.range.start.line >= start
    ]
    assert errors, diagnostics
    return min(errors, key=lambda d: d.range.start.line)


async def good_profile_works(client: LanguageClient, path: Path) -> None:
    """After whatever went wrong, the next profile through the same server succeeds."""
    result, diagnostics = await profile(client, path, "good", timeout_s=120)
    assert result["ok"], result
    start = def_line(path, "good")
    [verdict] = [d for d in diagnostics if d.range.start.line == start]
    v = result["report"]["verdict"]
    assert verdict.message.startswith(f"{v['headline']} · cause: {v['cause']} (")


async def start_session(
    client: LanguageClient, repo: Path, trace_dir: Path, progress: bool = False, **settings: Any
) -> None:
    """Initialize the server for the workspace ``repo``, keeping traces in ``trace_dir``, with
    ``settings`` besides; ``progress``: the client takes ``$/progress`` (and can cancel)."""
    window = types.WindowClientCapabilities(work_done_progress=True) if progress else None
    await client.initialize_session(
        types.InitializeParams(
            capabilities=types.ClientCapabilities(window=window),
            root_uri=repo.as_uri(),
            initialization_options={"settings": {"trace_dir": str(trace_dir), **settings}},
        )
    )
