"""Lifecycle handlers: settings at initialize and on change, clean shutdown."""

from __future__ import annotations

from lsprotocol import types

from torchscope.lsp.server import TorchscopeServer


def register(server: TorchscopeServer) -> None:
    @server.feature(types.INITIALIZE)
    def initialize(ls: TorchscopeServer, params: types.InitializeParams) -> None:
        ls.apply_settings(params.initialization_options)

    @server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
    def changed(ls: TorchscopeServer, params: types.DidChangeConfigurationParams) -> None:
        settings = params.settings
        if isinstance(settings, dict) and isinstance(settings.get("torchscope"), dict):
            settings = settings["torchscope"]
        if isinstance(settings, dict):
            ls.apply_settings(settings)

    @server.feature(types.SHUTDOWN)
    async def shutdown(ls: TorchscopeServer, params: None) -> None:
        await ls.close()
