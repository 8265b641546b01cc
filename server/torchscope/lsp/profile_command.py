"""``torchscope.profile {uri, line, call?, steps?, warmup?, timeout_s?}``.

Profiles the innermost function around ``line`` (0-based) in a worker, then publishes the
verdict as a diagnostic on the ``def`` line. Every failure — bad arguments, a syntax error, a
missing function or call expression, user code raising, a timeout — becomes an Error
diagnostic plus a message, and the server keeps serving.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from lsprotocol import types
from pygls.uris import to_fs_path

from torchscope.host.profile_run import ProfileFailure, ProfileOptions
from torchscope.lsp.constants import CMD_CLEAR, CMD_PROFILE, NOTIFY_PROFILE_DONE
from torchscope.lsp.diagnostics import failure_diagnostic
from torchscope.lsp.progress import JobProgress
from torchscope.lsp.results import ProfiledFunction, function_source
from torchscope.lsp.server import TorchscopeServer
from torchscope.lsp.settings import SettingsError
from torchscope.protocol import Output, Progress
from torchscope.targets import Target, TargetError, function_at, read_source

log = logging.getLogger(__name__)


class BadArguments(ValueError):
    """The command's arguments are not ``{uri, line, ...}``."""


@dataclass
class ProfileArgs:
    uri: str
    line: int
    call: Optional[str]
    overrides: dict[str, Any]

    @classmethod
    def parse(cls, arguments: tuple[Any, ...]) -> ProfileArgs:
        if len(arguments) != 1 or not isinstance(arguments[0], dict):
            raise BadArguments(
                f"{CMD_PROFILE} takes one argument object {{uri, line, call?}}, "
                f"got {list(arguments)!r}"
            )
        args = arguments[0]
        uri, line, call = args.get("uri"), args.get("line"), args.get("call")
        if not isinstance(uri, str) or not uri.startswith("file:"):
            raise BadArguments(f"{CMD_PROFILE}: 'uri' must be a file: URI, got {uri!r}")
        if isinstance(line, bool) or not isinstance(line, int) or line < 0:
            raise BadArguments(f"{CMD_PROFILE}: 'line' must be a 0-based line number, got {line!r}")
        if call is not None and not isinstance(call, str):
            raise BadArguments(f"{CMD_PROFILE}: 'call' must be a string, got {call!r}")
        overrides = {
            k: args[k] for k in ("steps", "warmup", "timeout_s", "with_stack") if k in args
        }
        return cls(uri, line, call, overrides)


def _locate(ls: TorchscopeServer, args: ProfileArgs) -> tuple[Path, str, Target]:
    path = Path(to_fs_path(args.uri) or "")
    source = read_source(path)
    target = function_at(source, str(path), args.line + 1)
    if target is None:
        raise TargetError(
            f"line {args.line + 1} of {path.name} is not inside a function — put the cursor in "
            "the def or body of the function to profile",
            line=args.line + 1,
        )
    document = ls.workspace.text_documents.get(args.uri)
    if document is not None and document.source != source:
        ls.show(
            types.MessageType.Warning,
            f"{path.name} has unsaved changes: torchscope profiles the saved file — save to "
            "include them",
        )
    return path, source, target


async def profile(ls: TorchscopeServer, arguments: tuple[Any, ...]) -> dict[str, Any]:
    try:
        args = ProfileArgs.parse(arguments)
    except BadArguments as exc:
        ls.show(types.MessageType.Error, str(exc))
        return {"ok": False, "error": str(exc)}
    try:
        path, source, target = _locate(ls, args)
    except TargetError as exc:
        failure = ProfileFailure("target", str(exc), exc.line)
        source = _source_or_empty(args.uri)
        return _report_failure(ls, args.uri, failure, exc.line or args.line + 1, source, None)
    try:
        settings = ls.settings.updated(args.overrides)
    except SettingsError as exc:
        failure = ProfileFailure("settings", str(exc), target.def_line)
        return _report_failure(ls, args.uri, failure, target.def_line, source, target)

    task = asyncio.current_task()
    assert task is not None
    request_id = ls.protocol.msg_id
    if request_id is not None:
        ls.running[request_id] = task
    execute_params = _execute_params()
    progress = JobProgress(ls, execute_params.work_done_token if execute_params else None)
    await progress.begin(f"Profiling {target.qualname}", task)

    def on_progress(message: Progress) -> None:
        progress.report(message.message, message.fraction)

    def on_output(message: Output) -> None:
        ls.log(f"[{target.qualname} {message.stream}] {message.text.rstrip()}")

    root = ls.workspace_root()
    options = ProfileOptions(
        steps=settings.steps,
        warmup=settings.warmup,
        timeout_s=settings.timeout_s,
        workspace_root=str(root) if root and path.is_relative_to(root) else str(path.parent),
        with_stack=settings.with_stack,
    )
    try:
        outcome = await ls.profiler.profile(target, args.call, options, on_progress, on_output)
    except asyncio.CancelledError:
        progress.end("cancelled")
        ls.log(f"profile of {target.qualname} cancelled")
        return {"ok": False, "error": "cancelled"}
    except ProfileFailure as failure:
        progress.end("failed")
        return _report_failure(ls, args.uri, failure, target.def_line, source, target)
    finally:
        if request_id is not None:
            ls.running.pop(request_id, None)
    progress.end(outcome.report.verdict.headline)
    data = outcome.to_json()
    _store(ls, args.uri, source, target, report=data)
    ls.refresh_views()
    ls.protocol.notify(NOTIFY_PROFILE_DONE, {"uri": args.uri, "report": data})
    return {"ok": True, "report": data}


def _execute_params() -> Optional[types.ExecuteCommandParams]:
    from torchscope.lsp.server import EXECUTE_PARAMS

    return EXECUTE_PARAMS.get()


def _source_or_empty(uri: str) -> str:
    try:
        return read_source(Path(to_fs_path(uri) or ""))
    except TargetError:
        return ""


def _store(
    ls: TorchscopeServer,
    uri: str,
    source: str,
    target: Target,
    report: Optional[dict[str, Any]] = None,
    failure: Optional[types.Diagnostic] = None,
) -> None:
    """Keep the result at the positions of the profiled (saved) source, then follow the
    editor's text if it differs (unsaved edits, or edits made while the job ran)."""
    result = ProfiledFunction(
        uri=uri,
        qualname=target.qualname,
        first_line=target.first_line,
        def_line=target.def_line,
        end_line=target.end_line,
        report=report,
        failure=failure,
        synced_text=source,
        function_text=function_source(source, target.first_line, target.end_line),
    )
    ls.results.put(result)
    document = ls.workspace.text_documents.get(uri)
    if document is not None:
        ls.results.reopen(uri, document.source)
    ls.publish(uri)


def _report_failure(
    ls: TorchscopeServer,
    uri: str,
    failure: ProfileFailure,
    def_line: int,
    source: str,
    target: Optional[Target],
) -> dict[str, Any]:
    lines = source.splitlines()
    qualname = target.qualname if target else None
    diagnostic = failure_diagnostic(failure, def_line, lines, qualname)
    placeholder = target or Target(uri, f"<line {def_line}>", def_line, def_line, def_line, ())
    _store(ls, uri, source, placeholder, failure=diagnostic)
    ls.show(types.MessageType.Error, diagnostic.message)
    if failure.traceback:
        ls.log(failure.traceback, types.MessageType.Error)
    return {"ok": False, "error": failure.message, "kind": failure.kind, "line": failure.line}


def clear(ls: TorchscopeServer, arguments: tuple[Any, ...]) -> dict[str, Any]:
    uri = arguments[0].get("uri") if arguments and isinstance(arguments[0], dict) else None
    for cleared in ls.results.clear(uri if isinstance(uri, str) else None):
        ls.publish(cleared)
    ls.refresh_views()
    return {"ok": True}


def register(server: TorchscopeServer) -> None:
    @server.command(CMD_PROFILE)
    async def profile_handler(ls: TorchscopeServer, *arguments: Any) -> dict[str, Any]:
        return await profile(ls, arguments)

    @server.command(CMD_CLEAR)
    def clear_handler(ls: TorchscopeServer, *arguments: Any) -> dict[str, Any]:
        return clear(ls, arguments)
