"""A real LSP client (pytest-lsp) talking to the real server over stdio."""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient

from tests.conftest import REPO

SERVER_ENV = {**os.environ, "PYTHONPATH": str(REPO / "server")}
SERVER_COMMAND = [sys.executable, "-m", "torchscope", "serve"]


@pytest_lsp.fixture(
    scope="module",
    config=ClientServerConfig(server_command=SERVER_COMMAND, server_env=SERVER_ENV),
)
async def client(lsp_client: LanguageClient, tmp_path_factory) -> AsyncIterator[None]:
    trace_dir: Path = tmp_path_factory.mktemp("lsp-traces")
    await lsp_client.initialize_session(
        types.InitializeParams(
            capabilities=types.ClientCapabilities(
                window=types.WindowClientCapabilities(work_done_progress=True)
            ),
            root_uri=REPO.as_uri(),
            initialization_options={
                "settings": {"steps": 3, "warmup": 1, "trace_dir": str(trace_dir)}
            },
        )
    )
    yield
    await lsp_client.shutdown_session()


async def hover_text(client: LanguageClient, uri: str, line: int) -> str:
    """The hover at column 4 of ``line`` as Markdown ("" when there is none)."""
    result = await client.text_document_hover_async(
        types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            position=types.Position(line=line, character=4),
        )
    )
    if result is None:
        return ""
    assert isinstance(result.contents, types.MarkupContent)
    return result.contents.value
