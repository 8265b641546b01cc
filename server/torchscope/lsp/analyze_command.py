"""``torchscope.analyzeTrace {path, max_memory?}``: analyse any trace file, in a child
process (``host/trace_analysis.py``); findings that point into the workspace (from Python
frames or ``Call stack`` args) become diagnostics on those lines. ``max_memory`` (e.g.
``"2G"``) overrides the ``maxMemory`` setting for this analysis."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lsprotocol import types

from torchscope.analysis import TraceError
from torchscope.lsp.constants import CMD_ANALYZE_TRACE
from torchscope.lsp.diagnostics import finding_diagnostic, line_range
from torchscope.lsp.server import TorchscopeServer
from torchscope.protocol import to_builtins


def _workspace_file(ls: TorchscopeServer, file: str) -> Path | None:
    root = ls.workspace_root()
    path = Path(file)
    if not path.is_absolute() and root is not None:
        path = root / path
    if not path.is_file():
        return None
    if root is not None and not path.resolve().is_relative_to(root.resolve()):
        return None
    return path.resolve()


async def analyze(ls: TorchscopeServer, arguments: tuple[Any, ...]) -> dict[str, Any]:
    args = arguments[0] if arguments and isinstance(arguments[0], dict) else {}
    path = args.get("path")
    if not isinstance(path, str) or not path:
        message = f"{CMD_ANALYZE_TRACE} takes {{path}}: the trace file to analyse"
        ls.show(types.MessageType.Error, message)
        return {"ok": False, "error": message}
    max_memory = args.get("max_memory")
    try:  # in a child process: a giant or hostile trace cannot take the server down
        report = await ls.analyzer.analyze(
            path, max_memory if isinstance(max_memory, str) else None
        )
    except TraceError as exc:
        ls.show(types.MessageType.Error, f"torchscope: {exc}")
        return {"ok": False, "error": str(exc)}
    data = to_builtins(report)
    data["trace_path"] = path
    by_uri: dict[str, list[types.Diagnostic]] = {}
    for finding in report.findings:
        file, line = finding.file, finding.line
        target = _workspace_file(ls, file) if file else None
        if target is None or line is None:
            continue
        uri = target.as_uri()
        range_ = line_range(ls.document_lines(uri), line)
        # trace_path: for the "Open trace" code action
        by_uri.setdefault(uri, []).append(
            finding_diagnostic(finding, range_, f" (from {Path(path).name})", trace_path=path)
        )
    previous = set(ls.trace_findings)
    ls.trace_findings = by_uri
    for uri in previous | set(by_uri):
        ls.publish(uri)
    ls.show(
        types.MessageType.Info,
        f"torchscope: {Path(path).name}: {report.verdict.headline} "
        f"({sum(len(d) for d in by_uri.values())} findings mapped to workspace lines)",
    )
    return {"ok": True, "report": data}


def register(server: TorchscopeServer) -> None:
    @server.command(CMD_ANALYZE_TRACE)
    async def analyze_handler(ls: TorchscopeServer, *arguments: Any) -> dict[str, Any]:
        return await analyze(ls, arguments)
