"""The one command skeleton every job command of the server instantiates.

``torchscope.profile``, ``torchscope.compareCompile`` and ``torchscope.sweep`` differ only in
what a ``JobCommand`` is given: how to read their extra arguments, the job they start, and
what they publish. Parsing ``{uri, line, call?, <option>?…}``, finding the function, the
options, ``$/progress`` with cancellation, and reporting failures live here, once.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Generic, Optional, TypeVar

from lsprotocol import types
from pygls.uris import to_fs_path

from torchscope.analysis import Diff
from torchscope.host.compare_run import CompareOutcome
from torchscope.host.profile_run import ProfileFailure, ProfileOutcome
from torchscope.lsp.constants import NOTIFY_PROFILE_DONE
from torchscope.lsp.diagnostics import failure_diagnostic
from torchscope.lsp.progress import JobProgress
from torchscope.lsp.results import Profile, ProfiledFunction, function_source
from torchscope.lsp.server import EXECUTE_PARAMS, TorchscopeServer
from torchscope.protocol import JobOptions, Output, Progress, to_builtins
from torchscope.source.targets import Target, TargetError, read_source, target_at

ExtraT = TypeVar("ExtraT")
OutcomeT = TypeVar("OutcomeT")
OnProgress = Callable[[Progress], None]
OnOutput = Callable[[Output], None]


class BadArguments(ValueError):
    """The command's arguments are not ``{uri, line, ...}``."""


@dataclass
class JobArgs:
    """``{uri, line, call?, …}``; ``raw`` is the whole argument object."""

    uri: str
    line: int
    call: Optional[str]
    raw: dict[str, Any]

    @classmethod
    def parse(cls, command: str, arguments: tuple[Any, ...]) -> JobArgs:
        if len(arguments) != 1 or not isinstance(arguments[0], dict):
            raise BadArguments(
                f"{command} takes one argument object {{uri, line, call?}}, got {list(arguments)!r}"
            )
        args = arguments[0]
        uri, line, call = args.get("uri"), args.get("line"), args.get("call")
        if not isinstance(uri, str) or not uri.startswith("file:"):
            raise BadArguments(f"{command}: 'uri' must be a file: URI, got {uri!r}")
        if isinstance(line, bool) or not isinstance(line, int) or line < 0:
            raise BadArguments(f"{command}: 'line' must be a 0-based line number, got {line!r}")
        if call is not None and not isinstance(call, str):
            raise BadArguments(f"{command}: 'call' must be a string, got {call!r}")
        return cls(uri, line, call, dict(args))


@dataclass
class Located:
    """The function a job runs on, the saved source it was found in, and the job's options."""

    args: JobArgs
    path: Path
    source: str
    target: Target
    options: JobOptions


def _no_extra(raw: dict[str, Any]) -> None:
    return None


@dataclass(frozen=True)
class JobCommand(Generic[ExtraT, OutcomeT]):
    """One ``workspace/executeCommand`` that runs a job: the skeleton plus what differs.

    ``parse`` reads the command's own arguments (raising ``BadArguments``); ``aliases`` maps
    argument names to ``JobOptions`` fields (``mode`` → ``compile_mode``); ``start`` runs the
    job; ``publish`` turns its outcome into the command's answer; ``failed`` replaces the
    default failure report (a diagnostic on the ``def`` line and a message).
    """

    name: str
    title: Callable[[Target, ExtraT], str]
    start: Callable[[TorchscopeServer, Located, ExtraT, OnProgress, OnOutput], Awaitable[OutcomeT]]
    publish: Callable[[TorchscopeServer, Located, OutcomeT], dict[str, Any]]
    parse: Callable[[dict[str, Any]], ExtraT] = _no_extra  # type: ignore[assignment]
    aliases: Mapping[str, str] = field(default_factory=dict)
    done: Callable[[OutcomeT], str] = lambda _: "done"
    failed: Optional[Callable[[TorchscopeServer, Located, ProfileFailure], dict[str, Any]]] = None

    async def __call__(self, ls: TorchscopeServer, arguments: tuple[Any, ...]) -> dict[str, Any]:
        try:
            args = JobArgs.parse(self.name, arguments)
            extra = self.parse(args.raw)
        except BadArguments as exc:
            return refuse(ls, exc)
        overrides = {self.aliases.get(k, k): v for k, v in args.raw.items()}
        located, failed = prepare(ls, args, overrides)
        if located is None:
            return failed or {"ok": False, "error": "no function"}
        target = located.target
        try:
            outcome, cancelled = await with_progress(
                ls,
                self.title(target, extra),
                target.qualname,
                lambda on_progress, on_output: self.start(
                    ls, located, extra, on_progress, on_output
                ),
                self.done,
            )
        except ProfileFailure as failure:
            if self.failed is not None:
                return self.failed(ls, located, failure)
            return report_failure(ls, args.uri, failure, target.def_line, located.source, target)
        if outcome is None:
            return {"ok": False, "error": cancelled or "cancelled"}
        return self.publish(ls, located, outcome)

    def register(self, server: TorchscopeServer) -> None:
        @server.command(self.name)
        async def handler(ls: TorchscopeServer, *arguments: Any) -> dict[str, Any]:
            return await self(ls, arguments)


def locate(ls: TorchscopeServer, args: JobArgs) -> tuple[Path, str, Target]:
    path = Path(to_fs_path(args.uri) or "")
    source, target = target_at(path, args.line + 1)
    document = ls.workspace.text_documents.get(args.uri)
    if document is not None and document.source != source:
        ls.show(
            types.MessageType.Warning,
            f"{path.name} has unsaved changes: torchscope profiles the saved file — save to "
            "include them",
        )
    return path, source, target


def prepare(
    ls: TorchscopeServer, args: JobArgs, overrides: Mapping[str, Any]
) -> tuple[Optional[Located], Optional[dict[str, Any]]]:
    """Find the function and the options (the settings with the command's overrides), or
    report why not."""
    try:
        path, source, target = locate(ls, args)
    except TargetError as exc:
        failure = ProfileFailure("target", str(exc), exc.line)
        source = source_or_empty(args.uri)
        return None, report_failure(ls, args.uri, failure, exc.line or args.line + 1, source, None)
    try:
        asked = {**overrides, "workspace_root": ls.workspace_for(path)}
        options = ls.jobs.options(asked, base=ls.settings.job)
    except ValueError as exc:
        failure = ProfileFailure("settings", str(exc), target.def_line)
        return None, report_failure(ls, args.uri, failure, target.def_line, source, target)
    return Located(args, path, source, target, options), None


async def with_progress(
    ls: TorchscopeServer,
    title: str,
    qualname: str,
    run: Callable[[OnProgress, OnOutput], Awaitable[OutcomeT]],
    done_message: Callable[[Any], str] = lambda _: "done",
) -> tuple[Optional[OutcomeT], Optional[str]]:
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
    report: Optional[Profile] = None,
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
    ls: TorchscopeServer,
    located: Located,
    outcome: ProfileOutcome | CompareOutcome,
    diff: Optional[Diff] = None,
) -> dict[str, Any]:
    """Keep a finished profile (typed), show it everywhere, and tell the client (JSON);
    ``diff`` is a before/after comparison that came with it (``report.diff``)."""
    uri = located.args.uri
    profile = outcome.profile if isinstance(outcome, CompareOutcome) else outcome
    comparison = outcome.compare if isinstance(outcome, CompareOutcome) else None
    kept = Profile(
        profile.report,
        profile.target.file,
        profile.result.trace_path,
        comparison,
        diff,
        located.source,
    )
    forget_placeholders(ls, uri)
    store_result(ls, uri, located.source, located.target, report=kept)
    ls.refresh_views()
    report = to_builtins(outcome)
    if diff is not None:
        report["diff"] = to_builtins(diff)
    ls.protocol.notify(NOTIFY_PROFILE_DONE, {"uri": uri, "report": report})
    return {"ok": True, "report": report}
