"""The server's wiring: a :class:`~torchscope.lsp.server.TorchscopeServer` with every handler
registered, and ``torchscope serve``'s stdio loop.

Handlers live in their own modules and import the server class from ``lsp/server.py``; only
this module imports the handlers, so the imports run one way.
"""

from __future__ import annotations

from torchscope.lsp import (
    analyze_command,
    attach_command,
    code_actions,
    compare_command,
    diff_command,
    documents,
    editor_features,
    fix_command,
    profile_command,
    ranks_command,
    run_command,
    target_request,
    tests_command,
)
from torchscope.lsp.server import TorchscopeServer

#: Every handler module, in the order they register: a new one (``lsp/<name>_command.py``
#: with ``register(server)``) is its module and its line here.
HANDLERS = (
    code_actions,
    documents,
    editor_features,
    target_request,
    analyze_command,
    attach_command,
    compare_command,
    diff_command,
    fix_command,
    profile_command,
    ranks_command,
    run_command,
    tests_command,
)


def create_server() -> TorchscopeServer:
    """A server with every handler of :data:`HANDLERS` registered."""
    server = TorchscopeServer()
    for module in HANDLERS:
        module.register(server)
    return server


def run_stdio() -> None:
    server = create_server()
    server.start_io()
