"""Hot lines in the editor over real LSP: inlay hints, hovers, code lenses, edits."""

from __future__ import annotations

import asyncio
import re
import shutil
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient

from tests.conftest import EXAMPLES
from tests.lsp.conftest import SERVER_COMMAND, SERVER_ENV, hover_text
from torchscope.analysis.results import VERDICT_IDS

pytestmark = pytest.mark.asyncio(loop_scope="module")

HINT_LABEL = re.compile(
    r"^  \d+% · [\d.]+ (µs|ms|s) CPU"
    r"( · [\d.]+ (GFLOP/s|TFLOP/s|GB/s)( · \d+ % of (spec-sheet )?(peak|bandwidth))?)?$"
)


class Refreshes:
    def __init__(self) -> None:
        self.inlay = asyncio.Event()
        self.lens = asyncio.Event()


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("hot-lines")
    for name in ("lines.py", "helpers.py"):
        shutil.copy(EXAMPLES / name, folder / name)
    return folder


@pytest_lsp.fixture(
    scope="module",
    config=ClientServerConfig(server_command=SERVER_COMMAND, server_env=SERVER_ENV),
)
async def client(lsp_client: LanguageClient, workspace: Path) -> AsyncIterator[None]:
    refreshes = Refreshes()

    @lsp_client.feature(types.WORKSPACE_INLAY_HINT_REFRESH)
    def inlay_refresh(client: LanguageClient, params: None) -> None:
        refreshes.inlay.set()

    @lsp_client.feature(types.WORKSPACE_CODE_LENS_REFRESH)
    def lens_refresh(client: LanguageClient, params: None) -> None:
        refreshes.lens.set()

    await lsp_client.initialize_session(
        types.InitializeParams(
            capabilities=types.ClientCapabilities(
                window=types.WindowClientCapabilities(work_done_progress=True),
                workspace=types.WorkspaceClientCapabilities(
                    inlay_hint=types.InlayHintWorkspaceClientCapabilities(refresh_support=True),
                    code_lens=types.CodeLensWorkspaceClientCapabilities(refresh_support=True),
                ),
            ),
            root_uri=workspace.as_uri(),
            initialization_options={
                "settings": {"steps": 3, "warmup": 1, "trace_dir": str(workspace / "traces")}
            },
        )
    )
    lsp_client.refreshes = refreshes  # type: ignore[attr-defined]
    yield
    await lsp_client.shutdown_session()


def index_of(text: str, needle: str) -> int:
    """0-based line index of the first line containing ``needle``."""
    for index, line in enumerate(text.splitlines()):
        if needle in line:
            return index
    raise AssertionError(needle)


async def hints(client: LanguageClient, uri: str, text: str) -> list[types.InlayHint]:
    end = types.Position(line=len(text.splitlines()), character=0)
    return (
        await client.text_document_inlay_hint_async(
            types.InlayHintParams(
                text_document=types.TextDocumentIdentifier(uri=uri),
                range=types.Range(start=types.Position(line=0, character=0), end=end),
            )
        )
        or []
    )


async def lens_titles(client: LanguageClient, uri: str) -> list[tuple[int, str]]:
    lenses = (
        await client.text_document_code_lens_async(
            types.CodeLensParams(text_document=types.TextDocumentIdentifier(uri=uri))
        )
        or []
    )
    return [(lens.range.start.line, lens.command.title if lens.command else "") for lens in lenses]


def verdicts(client: LanguageClient, uri: str) -> list[types.Diagnostic]:
    """torchscope's verdict diagnostics (line findings, which depend on the machine's load,
    such as thread-contention, are left out)."""
    return [
        d
        for d in client.diagnostics[uri]
        if d.source == "torchscope" and str(d.code) in VERDICT_IDS
    ]


def change(client: LanguageClient, uri: str, version: int, line: int, text: str) -> None:
    at = types.Position(line=line, character=0)
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
            content_changes=[
                types.TextDocumentContentChangePartial(
                    range=types.Range(start=at, end=at), text=text
                )
            ],
        )
    )


def open_document(client: LanguageClient, uri: str, text: str, version: int = 1) -> None:
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(
                uri=uri, language_id="python", version=version, text=text
            )
        )
    )


async def profile(client: LanguageClient, uri: str, line: int) -> dict[str, Any]:
    params = types.ExecuteCommandParams(
        command="torchscope.profile", arguments=[{"uri": uri, "line": line}]
    )
    result = await client.workspace_execute_command_async(params)
    assert result["ok"], result
    return dict(result["report"])


async def test_profile_shows_hints_hovers_and_lenses(
    client: LanguageClient, workspace: Path
) -> None:
    refreshes = client_refreshes(client)
    path = workspace / "lines.py"
    uri, text = path.as_uri(), path.read_text()
    open_document(client, uri, text)
    def_index = index_of(text, "def hot_and_cold(")
    hot_index = index_of(text, "product = a @ b")

    before = await lens_titles(client, uri)
    assert (def_index - 1, "Profile") in before or (def_index, "Profile") in before
    assert sum(1 for _, title in before if title == "Profile") == 5

    report = await profile(client, uri, hot_index)
    await asyncio.wait_for(refreshes.inlay.wait(), 30)
    await asyncio.wait_for(refreshes.lens.wait(), 30)

    found = await hints(client, uri, text)
    assert [h.position.line for h in found] == [hot_index]
    [hint] = found
    assert hint.position.character == len(text.splitlines()[hot_index])
    assert isinstance(hint.label, str) and HINT_LABEL.match(hint.label), hint.label
    assert hint.label.strip().startswith(f"{report['lines'][0]['share'] * 100:.0f}%")

    resolved = await client.inlay_hint_resolve_async(hint)
    assert (
        isinstance(resolved.tooltip, types.MarkupContent) and "aten::mm" in resolved.tooltip.value
    )

    hot_hover = await hover_text(client, uri, hot_index)
    assert "aten::mm" in hot_hover and "[512, 512]" in hot_hover
    # The matmul's achieved rate against this CPU's measured peak: in the inlay and the hover.
    [mm] = [op for op in report["lines"][0]["ops"] if op["name"] == "aten::mm"]
    assert mm["gflops"] > 0 and 0 < mm["efficiency"] <= 1
    rate = f"{mm['gflops']:.3g} GFLOP/s · {mm['efficiency'] * 100:.0f} % of peak"
    assert hint.label.endswith(rate), hint.label
    assert "achieved" in hot_hover and rate in hot_hover
    def_hover = await hover_text(client, uri, def_index)
    assert (
        report["verdict"]["headline"] in def_hover and "command:torchscope.openTrace" in def_hover
    )
    assert "Peaks: matmul float32" in def_hover and "(measured on this CPU)" in def_hover

    after = [title for _, title in await lens_titles(client, uri)]
    assert report["verdict"]["headline"] in after
    assert "Open trace" in after and "Compare with torch.compile" in after

    [verdict] = [d for d in client.diagnostics[uri] if d.code == report["verdict"]["id"]]
    assert verdict.range.start.line == def_index
    assert (
        verdict.related_information
        and verdict.related_information[0].location.range.start.line == hot_index
    )


async def test_edits_above_shift_and_edits_inside_stale(
    client: LanguageClient, workspace: Path
) -> None:
    path = workspace / "lines.py"
    uri, text = path.as_uri(), path.read_text()
    hot_index = index_of(text, "product = a @ b")
    def_index = index_of(text, "def hot_and_cold(")

    waiting = asyncio.ensure_future(
        client.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    )
    change(client, uri, 2, 0, "# two new lines\n# above everything\n")
    await asyncio.wait_for(waiting, 10)
    shifted = "# two new lines\n# above everything\n" + text
    [hint] = await hints(client, uri, shifted)
    assert hint.position.line == hot_index + 2 and not hint.label.endswith("(stale)")  # type: ignore[union-attr]
    [verdict] = verdicts(client, uri)
    assert verdict.range.start.line == def_index + 2
    assert "aten::mm" in await hover_text(client, uri, hot_index + 2)

    # An edit below the function moves nothing.
    below = index_of(shifted, "def loop(")
    change(client, uri, 3, below, "\n")
    after_below = shifted.splitlines(True)
    after_below.insert(below, "\n")
    shifted = "".join(after_below)
    [hint] = await hints(client, uri, shifted)
    assert hint.position.line == hot_index + 2

    # Typing inside the function stales the results.
    waiting = asyncio.ensure_future(
        client.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    )
    change(client, uri, 4, hot_index + 3, "    extra = 1\n")
    await asyncio.wait_for(waiting, 10)
    inside = shifted.splitlines(True)
    inside.insert(hot_index + 3, "    extra = 1\n")
    inside_text = "".join(inside)
    [hint] = await hints(client, uri, inside_text)
    assert isinstance(hint.label, str) and hint.label.endswith("(stale)")
    [verdict] = verdicts(client, uri)
    assert "stale" in verdict.message


async def test_close_and_reopen_keeps_results_until_the_file_changes(
    client: LanguageClient, workspace: Path
) -> None:
    path = workspace / "helpers_user.py"
    text = "import torch\n\n\ndef work():\n    a = torch.randn(256, 256)\n    return a @ a\n"
    path.write_text(text)
    uri = path.as_uri()
    open_document(client, uri, text)
    await profile(client, uri, 4)
    first = await hints(client, uri, text)
    assert first
    client.text_document_did_close(
        types.DidCloseTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri))
    )
    open_document(client, uri, text, version=5)
    again = await hints(client, uri, text)
    assert [h.position for h in again] == [h.position for h in first]
    assert not any(str(h.label).endswith("(stale)") for h in again)
    # The file changed on disk while closed: a line above → shifted; the body → stale.
    client.text_document_did_close(
        types.DidCloseTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri))
    )
    moved = "# a comment\n" + text
    path.write_text(moved)
    open_document(client, uri, moved, version=6)
    shifted = await hints(client, uri, moved)
    assert [h.position.line for h in shifted] == [h.position.line + 1 for h in first]
    client.text_document_did_close(
        types.DidCloseTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri))
    )
    edited = moved.replace("return a @ a", "return a @ a.T")
    path.write_text(edited)
    open_document(client, uri, edited, version=7)
    assert all(str(h.label).endswith("(stale)") for h in await hints(client, uri, edited))


def client_refreshes(client: Any) -> Refreshes:
    refreshes: Refreshes = client.refreshes
    return refreshes


async def test_with_stack_puts_a_total_on_the_callee_def(client: LanguageClient, workspace: Path) -> None:
    lines_path, helpers_path = workspace / "lines.py", workspace / "helpers.py"
    text = lines_path.read_text()
    args = {"uri": lines_path.as_uri(), "line": index_of(text, "return scale_up(y)"), "with_stack": True}
    result = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command="torchscope.profile", arguments=[args])
    )
    assert result["ok"], result
    helpers_text = helpers_path.read_text()
    open_document(client, helpers_path.as_uri(), helpers_text)
    [hint] = await hints(client, helpers_path.as_uri(), helpers_text)
    assert hint.position.line == index_of(helpers_text, "def scale_up(")
    assert isinstance(hint.label, str) and hint.label.startswith("  called by calls_helper: ")
