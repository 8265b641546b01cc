"""The server's wiring: a :class:`~torchscope.lsp.server.TorchscopeServer` with every handler
registered, and ``torchscope serve``'s stdio loop.

Handlers live in their own modules and import the server class from ``lsp/server.py``; only
this module imports the handlers, so the imports run one way.
"""

from __future__ import annotations

import importlib
import pkgutil

from torchscope import lsp
from torchscope.lsp import code_actions, documents, editor_features, target_request
from torchscope.lsp.server import TorchscopeServer


def create_server() -> TorchscopeServer:
    """A server with every handler registered: the modules above, and every
    ``lsp/*_command.py`` (so a new command module needs no edit here)."""
    server = TorchscopeServer()
    for module in (code_actions, documents, editor_features, target_request):
        module.register(server)
    for info in sorted(pkgutil.iter_modules(lsp.__path__), key=lambda m: m.name):
        if info.name.endswith("_command"):
            importlib.import_module(f"{lsp.__name__}.{info.name}").register(server)
    return server


def run_stdio() -> None:
    server = create_server()
    server.start_io()
