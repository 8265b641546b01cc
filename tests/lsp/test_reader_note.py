"""The editor's log says once, at start, when the native trace reader is not loaded and what
reading in pure Python costs; with the reader loaded it says nothing of the kind."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient

from tests.conftest import REPO
from tests.lsp.conftest import SERVER_COMMAND, SERVER_ENV
from torchscope.ingest import accel

NOTE = "native trace reader is not loaded"


async def _start(client: LanguageClient) -> None:
    await client.initialize_session(
        types.InitializeParams(capabilities=types.ClientCapabilities(), root_uri=REPO.as_uri())
    )


@pytest_lsp.fixture(
    config=ClientServerConfig(
        server_command=SERVER_COMMAND, server_env={**SERVER_ENV, "TORCHSCOPE_NO_NATIVE": "1"}
    ),
)
async def without_native(lsp_client: LanguageClient) -> AsyncIterator[LanguageClient]:
    await _start(lsp_client)
    yield lsp_client
    await lsp_client.shutdown_session()


@pytest_lsp.fixture(config=ClientServerConfig(server_command=SERVER_COMMAND, server_env=SERVER_ENV))
async def with_native(lsp_client: LanguageClient) -> AsyncIterator[LanguageClient]:
    await _start(lsp_client)
    yield lsp_client
    await lsp_client.shutdown_session()


async def _logged_after_start(client: LanguageClient) -> list[str]:
    """The log once the server has handled ``initialized``: it handles messages in order, so
    any later request's answer (here a hover, even one that fails) comes after what that
    handler logged."""
    with contextlib.suppress(Exception):
        await client.text_document_hover_async(
            types.HoverParams(
                text_document=types.TextDocumentIdentifier(uri=(REPO / "nosuch.py").as_uri()),
                position=types.Position(line=0, character=0),
            )
        )
    return [m.message for m in client.log_messages]


async def test_the_log_says_once_that_the_reader_is_missing(without_native: LanguageClient) -> None:
    without_native.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(settings={"torchscope": {"steps": 3}})
    )
    notes = [m for m in await _logged_after_start(without_native) if NOTE in m]
    assert len(notes) == 1, notes
    assert "TORCHSCOPE_NO_NATIVE" in notes[0] and accel.PURE_PYTHON_COST in notes[0]


async def test_the_log_is_silent_with_the_reader(with_native: LanguageClient) -> None:
    if accel.native is None:
        pytest.skip("no native reader built here")
    assert not [m for m in await _logged_after_start(with_native) if NOTE in m]
