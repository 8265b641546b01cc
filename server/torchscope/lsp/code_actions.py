"""Code actions on torchscope's diagnostics: open the trace in Perfetto, re-profile the function;
and on any function a fix applies to, **Try fix: … (measure)** (``fix_command.fix_actions``).

The actions run the client's commands (``torchscope.openTrace {path}``,
``torchscope.profileFunction {uri, line}``), the same ones the hover link and the code lenses
use, so any LSP client that implements those two commands gets them.
"""

from __future__ import annotations

from typing import Any, Optional

from lsprotocol import types

from torchscope.lsp.constants import SOURCE
from torchscope.lsp.fix_command import fix_actions
from torchscope.lsp.presentation import CLIENT_OPEN_TRACE, CLIENT_PROFILE
from torchscope.lsp.results import Profile
from torchscope.lsp.server import TorchscopeServer

KIND = types.CodeActionKind.QuickFix


def _trace_path(data: dict[str, Any], profile: Optional[Profile]) -> Optional[str]:
    path = data.get("trace_path")
    if not isinstance(path, str) and profile is not None:
        path = profile.trace_path
    return path if isinstance(path, str) and path else None


def code_actions(ls: TorchscopeServer, params: types.CodeActionParams) -> list[types.CodeAction]:
    wanted = [str(getattr(kind, "value", kind)) for kind in params.context.only or []]
    if wanted and not any(KIND.value == k or KIND.value.startswith(f"{k}.") for k in wanted):
        return []
    uri = params.text_document.uri
    actions: list[types.CodeAction] = []
    seen: set[tuple[str, str]] = set()

    def add(key: tuple[str, str], title: str, command: types.Command, d: types.Diagnostic) -> None:
        if key in seen:
            return
        seen.add(key)
        actions.append(types.CodeAction(title=title, kind=KIND, diagnostics=[d], command=command))

    for diagnostic in params.context.diagnostics:
        if diagnostic.source != SOURCE:
            continue
        data = diagnostic.data if isinstance(diagnostic.data, dict) else {}
        result = ls.results.at_line(uri, diagnostic.range.start.line + 1)
        report = result.report if result is not None else None
        trace = _trace_path(data, report)
        if trace is not None:
            add(
                ("trace", trace),
                "Open trace in Perfetto",
                types.Command(
                    title="Open trace", command=CLIENT_OPEN_TRACE, arguments=[{"path": trace}]
                ),
                diagnostic,
            )
        if result is not None:
            name = result.qualname if not result.qualname.startswith("<") else "this function"
            add(
                ("profile", result.qualname),
                f"Re-profile {name}",
                types.Command(
                    title="Profile",
                    command=CLIENT_PROFILE,
                    arguments=[{"uri": uri, "line": result.def_line - 1}],
                ),
                diagnostic,
            )
    ours = [d for d in params.context.diagnostics if d.source == SOURCE]
    return actions + fix_actions(ls, uri, params.range.start.line, ours)


def register(server: TorchscopeServer) -> None:
    server.feature(
        types.TEXT_DOCUMENT_CODE_ACTION, types.CodeActionOptions(code_action_kinds=[KIND])
    )(code_actions)
