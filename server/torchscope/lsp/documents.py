"""Lifecycle and document handlers: settings at initialize and on change, results following
edits (shifted, or stale), clean shutdown."""

from __future__ import annotations

from lsprotocol import types

from torchscope.lsp.server import TorchscopeServer


def register(server: TorchscopeServer) -> None:
    @server.feature(types.INITIALIZE)
    def initialize(ls: TorchscopeServer, params: types.InitializeParams) -> None:
        ls.apply_settings(params.initialization_options)

    @server.feature(types.INITIALIZED)
    def initialized(ls: TorchscopeServer, params: types.InitializedParams) -> None:
        ls.log_reader_note()
        if ls.prestart_worker():  # not with torchscope.prestart "off": nothing starts early
            ls.analyzer.prestart()  # Open trace's child, warm before the first trace

    @server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
    def changed(ls: TorchscopeServer, params: types.DidChangeConfigurationParams) -> None:
        settings = params.settings
        if isinstance(settings, dict) and isinstance(settings.get("torchscope"), dict):
            settings = settings["torchscope"]
        if isinstance(settings, dict):
            ls.apply_settings(settings)
            for uri in list(ls.results.by_uri):
                ls.publish(uri)
            ls.refresh_views()

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def opened(ls: TorchscopeServer, params: types.DidOpenTextDocumentParams) -> None:
        uri = params.text_document.uri
        was_closed = uri in ls.closed_documents  # results that finished meanwhile are unshown
        ls.closed_documents.discard(uri)
        if not ls.results.functions(uri):
            return
        if ls.results.reopen(uri, params.text_document.text) or was_closed:
            ls.publish(uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def closed(ls: TorchscopeServer, params: types.DidCloseTextDocumentParams) -> None:
        ls.closed_documents.add(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def edited(ls: TorchscopeServer, params: types.DidChangeTextDocumentParams) -> None:
        uri = params.text_document.uri
        if not ls.results.functions(uri):
            return
        text = ls.workspace.get_text_document(uri).source
        moved = False
        for change in params.content_changes:
            moved = ls.results.apply_change(uri, change, text) or moved
        if moved:
            ls.publish(uri)

    @server.feature(types.SHUTDOWN)
    async def shutdown(ls: TorchscopeServer, params: None) -> None:
        await ls.close()
