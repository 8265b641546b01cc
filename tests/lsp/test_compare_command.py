"""``torchscope.compareCompile`` and ``torchscope.sweep`` over real LSP (real server, worker,
torch and Inductor).

The server runs with ``OMP_NUM_THREADS=1`` (see tests/worker/test_compile_compare.py), a fresh
Inductor cache, and ``CXX`` pointing at no compiler: the guide's ``fn`` still compiles (its
``addmm`` is an extern call, no C++ is generated), while ``pointwise`` needs a C++ kernel and so
shows what a compile failure looks like in the editor.
"""

from __future__ import annotations

import asyncio
import atexit
import shutil
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient

from tests.conftest import EXAMPLES, FIXTURES, REPO
from tests.lsp.conftest import SERVER_COMMAND, SERVER_ENV, hover_text

pytestmark = [pytest.mark.asyncio(loop_scope="module"), pytest.mark.slow]

_CACHE = tempfile.mkdtemp(prefix="torchscope-lsp-inductor-")
atexit.register(shutil.rmtree, _CACHE, True)
ENV = {
    **SERVER_ENV,
    "OMP_NUM_THREADS": "1",
    "TORCHINDUCTOR_CACHE_DIR": _CACHE,
    "CXX": str(Path(_CACHE) / "no-such-compiler"),
}
MATMUL = EXAMPLES / "matmul_add.py"
SAMPLES = FIXTURES / "compile_samples.py"
CALL64 = "fn(torch.randn(64, 64), torch.randn(64, 64), torch.randn(64, 64))"
VERDICTS = {"keep-eager", "compile-wins", "no-difference", "inconclusive"}


@pytest_lsp.fixture(
    scope="module", config=ClientServerConfig(server_command=SERVER_COMMAND, server_env=ENV)
)
async def client(lsp_client: LanguageClient, tmp_path_factory: Any) -> AsyncIterator[None]:
    traces: Path = tmp_path_factory.mktemp("compare-lsp-traces")
    await lsp_client.initialize_session(
        types.InitializeParams(
            capabilities=types.ClientCapabilities(
                window=types.WindowClientCapabilities(work_done_progress=True)
            ),
            root_uri=REPO.as_uri(),
            initialization_options={
                "settings": {"steps": 3, "warmup": 1, "timeout_s": 300, "trace_dir": str(traces)}
            },
        )
    )
    yield
    await lsp_client.shutdown_session()


def def_line(path: Path, name: str) -> int:
    for index, line in enumerate(path.read_text().splitlines()):
        if line.startswith(f"def {name}("):
            return index
    raise AssertionError(name)


def open_document(client: LanguageClient, path: Path) -> str:
    uri = path.as_uri()
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(
                uri=uri, language_id="python", version=1, text=path.read_text()
            )
        )
    )
    return uri


async def execute(
    client: LanguageClient, command: str, args: dict[str, Any], token: str | None = None
) -> Any:
    if token is not None:
        client.progress_reports.setdefault(token, [])
    waiting = asyncio.ensure_future(
        client.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    )
    result = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command=command, arguments=[args], work_done_token=token)
    )
    if result.get("ok") and "sweep" not in result:
        await asyncio.wait_for(waiting, 60)
    else:
        waiting.cancel()
    return result


async def test_compare_publishes_the_verdict_hover_link_and_lens(client: LanguageClient) -> None:
    uri = open_document(client, MATMUL)
    line = def_line(MATMUL, "fn")
    result = await execute(
        client, "torchscope.compareCompile", {"uri": uri, "line": line, "call": CALL64}, "tok-cmp"
    )
    assert result["ok"], result
    compare = result["report"]["compare"]
    assert compare["verdict"]["id"] in VERDICTS
    assert compare["compiled"]["graphs"][0]["code_path"].startswith(_CACHE)
    # The client's panel shows this Markdown as it is: the table, verdict and generated code.
    panel = result["markdown"]
    assert panel.startswith("## `fn`: eager vs torch.compile (mode=default)")
    assert compare["verdict"]["headline"] in panel and "| per call | eager |" in panel
    assert compare["compiled"]["graphs"][0]["code_path"] in panel

    diagnostics = [d for d in client.diagnostics[uri] if d.source == "torchscope"]
    codes = {d.code for d in diagnostics if d.range.start.line == line}
    assert result["report"]["verdict"]["id"] in codes  # the eager profile's verdict
    [compared] = [d for d in diagnostics if d.code in VERDICTS]
    assert compared.message == compare["verdict"]["headline"]
    assert {r.message.split(":")[0] for r in compared.related_information or []} >= {"compile-copy"}

    text = await hover_text(client, uri, line)
    assert "**torch.compile** (mode=default)" in text
    assert "## Call CompiledFxGraph" in text and "command:torchscope.openGeneratedCode?" in text
    # issue 42: the body's hover puts its compiled kernel (the extern addmm) beside eager
    body = await hover_text(client, uri, line + 1)
    assert f"**torch.compile** — line {line + 2}: eager " in body, body
    assert "→ compiled " in body and "an extern kernel" in body
    assert [k["lines"] for k in compare["compiled"]["kernels"] if k["extern"]] == [[line + 2]]

    lenses = await client.text_document_code_lens_async(
        types.CodeLensParams(text_document=types.TextDocumentIdentifier(uri=uri))
    )
    titles = [lens.command.title for lens in lenses or [] if lens.command]
    assert any(t.startswith("torch.compile: ") for t in titles), titles
    reports = client.progress_reports["tok-cmp"]
    assert isinstance(reports[0], types.WorkDoneProgressBegin)
    assert any(
        isinstance(r, types.WorkDoneProgressReport) and "compiled" in (r.message or "")
        for r in reports
    )


async def test_a_compile_failure_shows_the_compiler_error_and_keeps_the_eager_profile(
    client: LanguageClient,
) -> None:
    uri = open_document(client, SAMPLES)
    line = def_line(SAMPLES, "pointwise")
    shown = len(client.messages)
    result = await execute(client, "torchscope.compareCompile", {"uri": uri, "line": line})
    assert result["ok"], result
    report = result["report"]
    # the eager profile is still shown (a pointwise op: memory-bound at large sizes)
    assert report["verdict"]["id"] in ("overhead-bound", "compute-bound", "memory-bound")
    assert report["compare"]["compiled"] is None
    assert "No working C++ compiler" in report["compare"]["error"]["message"]
    diagnostics = [d for d in client.diagnostics[uri] if d.source == "torchscope"]
    [failed] = [d for d in diagnostics if d.code == "compile-failed"]
    assert failed.severity == types.DiagnosticSeverity.Warning
    assert "No working C++ compiler" in failed.message
    warnings = [m for m in client.messages[shown:] if m.type == types.MessageType.Warning]
    assert any("No working C++ compiler" in m.message for m in warnings)


async def test_sweep_returns_points_and_a_chart(client: LanguageClient) -> None:
    uri = MATMUL.as_uri()
    template = "fn(torch.randn({N}, {N}), torch.randn({N}, {N}), torch.randn({N}, {N}))"
    result = await execute(
        client,
        "torchscope.sweep",
        {"uri": uri, "line": def_line(MATMUL, "fn"), "call": template, "sizes": [8, 128]},
    )
    assert result["ok"], result
    sweep = result["sweep"]
    assert [p["N"] for p in sweep["points"]] == [8, 128]
    assert sweep["call"] == template
    assert Path(sweep["chart_path"]).is_file()
    panel = result["markdown"].replace("**", "").splitlines()
    assert panel[0] == "## `fn` across N"
    assert [row.split(" | ")[0] for row in panel if row.startswith(("| 8 ", "| 128 "))] == [
        "| 8",
        "| 128",
    ]


@pytest.mark.parametrize(
    ("command", "extra", "expected"),
    [
        ("torchscope.compareCompile", {"mode": "fastest"}, "'mode' must be one of"),
        ("torchscope.sweep", {"sizes": [8, 0]}, "'sizes' must be a list"),
        ("torchscope.sweep", {"call": "fn(1, 2, 3)"}, "no {N} placeholder"),
    ],
)
async def test_bad_arguments_are_refused(
    client: LanguageClient, command: str, extra: dict[str, Any], expected: str
) -> None:
    args = {"uri": MATMUL.as_uri(), "line": def_line(MATMUL, "fn"), **extra}
    result = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command=command, arguments=[args])
    )
    assert not result["ok"]
    assert expected in result["error"]
