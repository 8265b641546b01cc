"""``torchscope/target {uri, line}``: which function a line belongs to, and what calling it needs.

The client uses it before profiling: to build the input box's call template from the
parameters, and to skip the box when a ``# torchscope:`` directive or no arguments suffice.
Only parses the file; never runs it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

from pygls.uris import to_fs_path

from torchscope.lsp.constants import REQ_TARGET
from torchscope.lsp.server import TorchscopeServer
from torchscope.source.targets import TargetError, function_at


def describe_target(ls: TorchscopeServer, uri: str, line: int) -> Optional[dict[str, Any]]:
    path = Path(to_fs_path(uri) or "")
    try:
        target = function_at(ls.document_text(uri), str(path), line + 1)
    except TargetError:
        return None
    if target is None:
        return None
    directive = target.directive_for(cuda_available=False)
    return {
        "qualname": target.qualname,
        "line": target.def_line - 1,
        "params": [
            {"name": p.name, "kind": p.kind, "has_default": p.has_default} for p in target.params
        ],
        "directive": directive.call if directive else None,
        "needs_call": target.needs_call,
        "is_method": target.is_method,
    }


def register(server: TorchscopeServer) -> None:
    @server.feature(REQ_TARGET)
    def target(ls: TorchscopeServer, params: Any) -> Optional[dict[str, Any]]:
        uri = getattr(params, "uri", None)
        line = getattr(params, "line", None)
        if isinstance(params, dict):
            uri, line = params.get("uri"), params.get("line")
        if not isinstance(uri, str) or not isinstance(line, int):
            return None
        return describe_target(ls, uri, line)
