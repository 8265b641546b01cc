"""What every job command of the server shares: arguments, finding the function, progress
with cancellation, storing and publishing results, reporting failures.

``torchscope.profile``, ``torchscope.compareCompile`` and ``torchscope.sweep`` differ only in
the job they run; everything around the job lives here, once.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Optional, TypeVar

from lsprotocol import types
from pygls.uris import to_fs_path

from torchscope.host.profile_run import ProfileFailure, ProfileOptions
from torchscope.lsp.constants import CMD_PROFILE, NOTIFY_PROFILE_DONE
from torchscope.lsp.diagnostics import failure_diagnostic
from torchscope.lsp.progress import JobProgress
from torchscope.lsp.results import ProfiledFunction, function_source
from torchscope.lsp.server import TorchscopeServer
from torchscope.lsp.settings import SettingsError
from torchscope.protocol import Output, Progress
from torchscope.targets import Target, TargetError, function_at, read_source

T = TypeVar("T")


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
            k: args[k]
            for k in ("steps", "warmup", "timeout_s", "with_stack", "max_memory")
            if k in args
        }
        return cls(uri, line, call, overrides)


def locate(ls: TorchscopeServer, args: ProfileArgs) -> tuple[Path, str, Target]:
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


@dataclass
class Located:
    """The function a job runs on, the saved source it was found in, and the job's options."""

    path: Path
    source: str
    target: Target
    options: ProfileOptions


def parse_args(command: str, arguments: tuple[Any, ...]) -> tuple[ProfileArgs, dict[str, Any]]:
    try:
        parsed = ProfileArgs.parse(arguments)
    except BadArguments as exc:
        raise BadArguments(str(exc).replace(CMD_PROFILE, command)) from None
    return parsed, dict(arguments[0])


def prepare(
    ls: TorchscopeServer, args: ProfileArgs
) -> tuple[Optional[Located], Optional[dict[str, Any]]]:
    """Find the function and the options, or report why not (as ``torchscope.profile`` does)."""
    try:
        path, source, target = locate(ls, args)
    except TargetError as exc:
        failure = ProfileFailure("target", str(exc), exc.line)
        source = source_or_empty(args.uri)
        return None, report_failure(ls, args.uri, failure, exc.line or args.line + 1, source, None)
    try:
        settings = ls.settings.updated(args.overrides)
    except SettingsError as exc:
        failure = ProfileFailure("settings", str(exc), target.def_line)
        return None, report_failure(ls, args.uri, failure, target.def_line, source, target)
    root = ls.workspace_root()
    options = ProfileOptions(
        steps=settings.steps,
        warmup=settings.warmup,
        timeout_s=settings.timeout_s,
        workspace_root=str(root) if root and path.is_relative_to(root) else str(path.parent),
        with_stack=settings.with_stack,
        max_memory=settings.max_memory,
    )
    return Located(path, source, target, options), None


async def with_progress(
    ls: TorchscopeServer,
    title: str,
    qualname: str,
    run: Callable[[Callable[[Progress], None], Callable[[Output], None]], Awaitable[T]],
    done_message: Callable[[Any], str] = lambda _: "done",
) -> tuple[Optional[T], Optional[str]]:
    """Run a job with ``$/progress`` and cancellation; (result, None) or (None, "cancelled")."""
    task = asyncio.current_task()
    assert task is not None
    request_id = ls.protocol.msg_id
    if request_id is not None:
        ls.running[request_id] = task
    params = execute_params()
    progress = JobProgress(ls, params.work_done_token if params else None)
    await progress.begin(title, task)

    def on_progress(message: Progress) -> None:
        progress.report(message.message, message.fraction)

    def on_output(message: Output) -> None:
        ls.log(f"[{qualname} {message.stream}] {message.text.rstrip()}")

    try:
        result = await run(on_progress, on_output)
    except asyncio.CancelledError:
        progress.end("cancelled")
        ls.log(f"{title}: cancelled")
        return None, "cancelled"
    except BaseException:
        progress.end("failed")
        raise
    finally:
        if request_id is not None:
            ls.running.pop(request_id, None)
    progress.end(done_message(result))
    return result, None


def execute_params() -> Optional[types.ExecuteCommandParams]:
    from torchscope.lsp.server import EXECUTE_PARAMS

    return EXECUTE_PARAMS.get()


def source_or_empty(uri: str) -> str:
    try:
        return read_source(Path(to_fs_path(uri) or ""))
    except TargetError:
        return ""


def store_result(
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
    if uri not in ls.closed_documents:  # closed while the job ran: kept, shown on reopen
        ls.publish(uri)


def forget_placeholders(ls: TorchscopeServer, uri: str) -> None:
    """A profile of the file worked: errors not tied to a function ("line 3 is not inside a
    function") are out of date."""
    kept = ls.results.by_uri.get(uri, {})
    for qualname in [q for q in kept if q.startswith("<line ")]:
        del kept[qualname]


def report_failure(
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
    store_result(ls, uri, source, placeholder, failure=diagnostic)
    ls.show(types.MessageType.Error, diagnostic.message)
    if failure.traceback:
        ls.log(failure.traceback, types.MessageType.Error)
    return {"ok": False, "error": failure.message, "kind": failure.kind, "line": failure.line}


def refuse(ls: TorchscopeServer, exc: BadArguments) -> dict[str, Any]:
    """Bad command arguments: say so, change nothing."""
    ls.show(types.MessageType.Error, str(exc))
    return {"ok": False, "error": str(exc)}


def publish_profile(
    ls: TorchscopeServer, uri: str, located: Located, report: dict[str, Any]
) -> dict[str, Any]:
    """Keep a finished profile, show it everywhere, and tell the client."""
    forget_placeholders(ls, uri)
    store_result(ls, uri, located.source, located.target, report=report)
    ls.refresh_views()
    ls.protocol.notify(NOTIFY_PROFILE_DONE, {"uri": uri, "report": report})
    return {"ok": True, "report": report}
