"""Inlay hints on hot lines, hovers on hot lines and on the ``def``, code lenses above defs."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

from lsprotocol import types
from pygls.uris import to_fs_path

from torchscope.analysis import LineStats
from torchscope.host.captures import capture_origin, find_capture
from torchscope.lsp.compare_presentation import lens_title
from torchscope.lsp.constants import CLIENT_COMPARE_LAST_COMMIT
from torchscope.lsp.diff_command import lens_title as diff_lens_title
from torchscope.lsp.presentation import (
    CLIENT_COMPARE_COMPILE,
    CLIENT_OPEN_TRACE,
    CLIENT_PROFILE,
    callee_label,
    def_hover,
    headline_title,
    hot_lines,
    line_hover,
    line_label,
)
from torchscope.lsp.results import ProfiledFunction
from torchscope.lsp.server import TorchscopeServer
from torchscope.report.memory import memory_lines
from torchscope.report.outcome_text import age_text
from torchscope.source.targets import Target, TargetError, list_functions


def inlay_hints(ls: TorchscopeServer, params: types.InlayHintParams) -> list[types.InlayHint]:
    if not ls.settings.inlay_hints:
        return []
    uri = params.text_document.uri
    lines = ls.document_lines(uri)
    first, last = params.range.start.line, params.range.end.line
    hints = []
    for result in ls.results.functions(uri):
        if result.report is None:
            continue
        gpu = result.report.gpu
        memory = memory_lines(result.report.report)
        # VS Code truncates a line's hints past ~43 characters in all: where a memory hint
        # follows, the time hint leaves out the achieved rate (the hover still has it).
        with_memory = {line.line for line, _ in memory}
        for line in hot_lines(result.report, ls.settings.hot_share):
            index = result.current_line(line.line) - 1
            if not first <= index <= last or index >= len(lines):
                continue
            peaks = result.report.report.peaks
            rate = line.line not in with_memory
            hints.append(
                types.InlayHint(
                    position=types.Position(line=index, character=len(lines[index])),
                    label=line_label(line, gpu, result.stale, peaks, rate),
                    padding_left=True,
                    data={"uri": uri, "qualname": result.qualname, "line": line.line},
                )
            )
        for line, label in memory:
            index = result.current_line(line.line) - 1
            if first <= index <= last and index < len(lines):
                hints.append(
                    types.InlayHint(
                        position=types.Position(line=index, character=len(lines[index])),
                        label=label + (" (stale)" if result.stale else ""),
                        padding_left=True,
                        data={"uri": uri, "qualname": result.qualname, "line": line.line},
                    )
                )
    hints += callee_hints(ls, uri, lines, first, last)
    return hints


def callee_hints(
    ls: TorchscopeServer, uri: str, lines: list[str], first: int, last: int
) -> list[types.InlayHint]:
    """On the ``def`` of a workspace function another profile called (``with_stack``): its
    share of the caller. The def is found by name in the current text, so edits cannot
    misplace it."""
    path = str(Path(to_fs_path(uri) or ""))
    wanted = [
        (result, callee)
        for results in ls.results.by_uri.values()
        for result in results.values()
        if result.report is not None
        for callee in result.report.report.callees
        if callee.share >= ls.settings.hot_share
        and (path == callee.file or path.endswith("/" + callee.file.lstrip("./")))
    ]
    if not wanted:
        return []
    try:
        functions = list_functions("\n".join(lines), path)
    except TargetError:
        return []
    hints = []
    for result, callee in wanted:
        same_name = [f for f in functions if f.qualname.split(".")[-1] == callee.name]
        if not same_name:
            continue
        target = min(same_name, key=lambda f: abs(f.def_line - callee.line))
        index = target.def_line - 1
        if not first <= index <= last:
            continue
        label = callee_label(callee, result.qualname, result.stale)
        hints.append(
            types.InlayHint(
                position=types.Position(line=index, character=len(lines[index])),
                label=label,
                padding_left=True,
            )
        )
    return hints


def resolve_inlay_hint(ls: TorchscopeServer, hint: types.InlayHint) -> types.InlayHint:
    """The tooltip (the same table as the hover) is built only when the user points at a hint."""
    data = hint.data if isinstance(hint.data, dict) else {}
    result = ls.results.latest(str(data.get("uri")), str(data.get("qualname")))
    line = _line_entry(result, data.get("line"))
    if result is not None and result.report is not None and line is not None:
        hint.tooltip = types.MarkupContent(
            kind=types.MarkupKind.Markdown,
            value=line_hover(result.report, line, result.qualname, result.stale),
        )
    return hint


def _line_entry(result: Optional[ProfiledFunction], profiled_line: Any) -> Optional[LineStats]:
    if result is None or result.report is None:
        return None
    for line in result.report.report.lines:
        if line.line == profiled_line:
            return line
    return None


def hover(ls: TorchscopeServer, params: types.HoverParams) -> Optional[types.Hover]:
    uri = params.text_document.uri
    current = params.position.line + 1
    result = ls.results.at_line(uri, current)
    if result is None or result.report is None:
        return None
    if current == result.def_line:
        text = def_hover(result.report, result.qualname, result.offset, result.stale)
    else:
        line = _line_entry(result, current - result.offset)
        if line is None:
            return None
        text = line_hover(result.report, line, result.qualname, result.stale)
    return types.Hover(contents=types.MarkupContent(kind=types.MarkupKind.Markdown, value=text))


def _lens(line: types.Range, title: str, command: str, argument: Any) -> types.CodeLens:
    return types.CodeLens(
        range=line, command=types.Command(title=title, command=command, arguments=[argument])
    )


def _capture_lens(
    ls: TorchscopeServer, target: Target, line: types.Range, argument: dict[str, Any]
) -> list[types.CodeLens]:
    """**Profile with captured inputs (train.py, 5 min ago)** when a profile of the function
    would replay a capture (``torchscope run --capture``): one exists and no directive applies.
    ``replay`` tells the client to send no call expression (not even a remembered one)."""
    hello = ls.profiler.started_hello
    if target.directive_for(hello is not None and hello.cuda_available) is not None:
        return []
    found = find_capture(ls.workspace_for(Path(target.file)), target.file, target.qualname)
    if found is None:
        return []
    said = [capture_origin(Path(found.path or "")), age_text(found.captured_at)]
    shown = ", ".join(s for s in said if s)
    title = "Profile with captured inputs" + (f" ({shown})" if shown else "")
    return [_lens(line, title, CLIENT_PROFILE, {**argument, "replay": True})]


def _function_lenses(
    ls: TorchscopeServer, uri: str, target: Target, line: types.Range
) -> list[types.CodeLens]:
    """Profile, Profile memory and Compare with last commit; after a run also the verdict,
    Open trace and the torch.compile comparison."""
    argument = {"uri": uri, "line": target.def_line - 1}
    result = ls.results.latest(uri, target.qualname)
    profile = result.report if result else None
    stale = bool(result and result.stale)
    lenses = [
        _lens(line, "Profile", CLIENT_PROFILE, argument),
        _lens(line, "Profile memory", CLIENT_PROFILE, {**argument, "memory": True}),
        *_capture_lens(ls, target, line, argument),
        _lens(line, diff_lens_title(profile, stale), CLIENT_COMPARE_LAST_COMMIT, argument),
    ]
    title = headline_title(profile, stale)
    if profile is None or title is None:
        return lenses
    trace = {"path": profile.trace_path}
    compare = lens_title(profile.comparison) or "Compare with torch.compile"
    return [
        *lenses,
        _lens(line, title, CLIENT_OPEN_TRACE, trace),
        _lens(line, "Open trace", CLIENT_OPEN_TRACE, trace),
        _lens(line, compare, CLIENT_COMPARE_COMPILE, argument),
    ]


def code_lenses(ls: TorchscopeServer, params: types.CodeLensParams) -> list[types.CodeLens]:
    uri = params.text_document.uri
    try:
        source = ls.document_text(uri)
        targets = list_functions(source, str(Path(to_fs_path(uri) or "")))
    except (TargetError, OSError, UnicodeDecodeError):
        return []
    lenses = []
    for target in targets:
        if "<locals>" in target.qualname:
            continue  # nested functions only exist while their parent runs
        start = types.Position(line=target.first_line - 1, character=0)
        lenses += _function_lenses(ls, uri, target, types.Range(start=start, end=start))
    return lenses


def register(server: TorchscopeServer) -> None:
    server.feature(types.TEXT_DOCUMENT_INLAY_HINT, types.InlayHintOptions(resolve_provider=True))(
        inlay_hints
    )
    server.feature(types.INLAY_HINT_RESOLVE)(resolve_inlay_hint)
    server.feature(types.TEXT_DOCUMENT_HOVER)(hover)
    server.feature(types.TEXT_DOCUMENT_CODE_LENS)(code_lenses)
