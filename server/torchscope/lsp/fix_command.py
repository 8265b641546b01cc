"""Measured fixes in the editor: the **Try fix: … (measure)** code action and
``torchscope.tryFix {uri, line, fix, call?, steps?, warmup?, timeout_s?}``.

The code action is offered on the function under the cursor for every fix whose rewrite
applies to it (``source/fixes``, pure source work on the editor's text). The command runs
the same trial as ``torchscope fix --try`` (``host.fix_run.try_fix``: the rewrite of a scratch
copy timed against the saved file in one worker job, outputs compared) with ``$/progress``.
A rewrite that may be offered (faster, and the check found nothing changed) is shown as
``measured 2.3× faster (95 % interval 2.1–2.5×), same outputs · checked: outputs,
requires_grad, … · assumes: …`` (``FixTrial.summary``) with **Apply** / **Discard**
(``window/showMessageRequest``); Apply sends ``workspace/applyEdit`` replacing the function's
lines, so the editor's undo takes it back. A refused rewrite is a warning naming the refusal
(raises, changes the outputs, changes autograd, changes the state, no evidence, not faster)
and no edit. Returns ``{ok, fix, offered}`` (``fix``
is the ``torchscope fix --try --json`` object) as soon as the measurement is done; the
question runs on its own.
"""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any, Optional

from lsprotocol import types
from pygls.uris import to_fs_path

from torchscope.host.fix_run import FixNotApplicable, device_of
from torchscope.host.profile_run import ProfileFailure
from torchscope.lsp.constants import CMD_TRY_FIX
from torchscope.lsp.jobs import (
    BadArguments,
    JobCommand,
    Located,
    OnOutput,
    OnProgress,
    report_failure,
)
from torchscope.lsp.server import TorchscopeServer
from torchscope.protocol import to_builtins
from torchscope.source.fixes import fix_by_id, offered
from torchscope.source.fixes.base import Rewrite
from torchscope.source.fixes.offers import with_measured
from torchscope.source.fixes.trial import FixTrial
from torchscope.source.targets import TargetError, function_at

APPLY = "Apply"
DISCARD = "Discard"
KIND = types.CodeActionKind.QuickFix

#: Questions waiting for the user's Apply / Discard (kept so they are not collected).
_ASKING: set[asyncio.Task[None]] = set()


def _device(ls: TorchscopeServer) -> str:
    """Where the function runs: the settings' device, CUDA only once the worker said so."""
    hello = ls.profiler.started_hello
    return device_of(ls.settings.job, hello is not None and hello.cuda_available)


def fix_actions(
    ls: TorchscopeServer, uri: str, line: int, diagnostics: list[types.Diagnostic]
) -> list[types.CodeAction]:
    """**Try fix: <title> (measure)** for each fix that applies to the function at ``line``
    (0-based) of the editor's text."""
    try:
        source = ls.document_text(uri)
    except (TargetError, OSError, UnicodeDecodeError):
        return []
    try:
        target = function_at(source, to_fs_path(uri) or "", line + 1)
    except TargetError:  # a syntax error while typing: no fixes, no error
        return []
    if target is None:
        return []
    actions, seen = [], set()
    for fix, _ in offered(source, target.qualname, _device(ls)):
        if fix.id in seen:
            continue
        seen.add(fix.id)
        title = f"Try fix: {fix.title} (measure)"
        argument = {"uri": uri, "line": target.def_line - 1, "fix": fix.id}
        command = types.Command(title=title, command=CMD_TRY_FIX, arguments=[argument])
        actions.append(
            types.CodeAction(title=title, kind=KIND, diagnostics=diagnostics, command=command)
        )
    return actions


def _fix_id(raw: dict[str, Any]) -> str:
    fix = raw.get("fix")
    if not isinstance(fix, str) or fix_by_id(fix) is None:
        raise BadArguments(f"{CMD_TRY_FIX}: 'fix' must be a fix id, got {fix!r}")
    return fix


async def _start(
    ls: TorchscopeServer, located: Located, fix: str, on_progress: OnProgress, _: OnOutput
) -> tuple[FixTrial, Rewrite]:
    target, call = located.target, located.args.call
    try:
        return await ls.jobs.try_fix(target, call, fix, located.options, on_progress)
    except FixNotApplicable as exc:
        raise ProfileFailure("fix", str(exc)) from exc


def _publish(
    ls: TorchscopeServer, located: Located, outcome: tuple[FixTrial, Rewrite]
) -> dict[str, Any]:
    trial, rewrite = outcome
    qualname = located.target.qualname
    ls.log(f"{qualname}: fix {trial.id}: {trial.summary}")
    _record(ls, located, trial)
    if trial.offered:
        task = asyncio.ensure_future(_ask(ls, located, trial, rewrite))
        _ASKING.add(task)
        task.add_done_callback(_ASKING.discard)
    else:
        ls.show(types.MessageType.Warning, f"torchscope: {qualname}: {trial.summary}")
    return {"ok": True, "fix": to_builtins(trial), "offered": trial.offered}


def _record(ls: TorchscopeServer, located: Located, trial: FixTrial) -> None:
    """The function's stored profile gains what the trial measured (its findings' diagnostics
    say it), when there is one."""
    result = ls.results.latest(located.args.uri, located.target.qualname)
    if result is None or result.report is None:
        return
    report = with_measured(result.report.report, trial.id, trial.measured())
    result.report = dataclasses.replace(result.report, report=report)
    ls.publish(located.args.uri)


async def _ask(ls: TorchscopeServer, located: Located, trial: FixTrial, rewrite: Rewrite) -> None:
    """Apply / Discard; Apply edits the function through ``workspace/applyEdit``."""
    qualname = located.target.qualname
    params = types.ShowMessageRequestParams(
        type=types.MessageType.Info,
        message=f"torchscope: {qualname}: {trial.summary}",
        actions=[types.MessageActionItem(title=APPLY), types.MessageActionItem(title=DISCARD)],
    )
    answer = await ls.window_show_message_request_async(params)
    if answer is None or answer.title != APPLY:
        return
    edit = function_edit(ls, located, rewrite)
    if edit is None:
        ls.show(
            types.MessageType.Warning,
            f"torchscope: {located.path.name} changed since fix {trial.id} was measured — "
            "save it and try the fix again",
        )
        return
    label = f"torchscope fix {trial.id}"
    result = await ls.workspace_apply_edit_async(
        types.ApplyWorkspaceEditParams(edit=edit, label=label)
    )
    if not result.applied:
        reason = result.failure_reason or "the editor refused the edit"
        ls.show(types.MessageType.Warning, f"torchscope: fix {trial.id} not applied: {reason}")


def function_edit(
    ls: TorchscopeServer, located: Located, rewrite: Rewrite
) -> Optional[types.WorkspaceEdit]:
    """The function's lines replaced by their rewrite, or None when the editor's text is no
    longer the text that was measured."""
    uri = located.args.uri
    if ls.workspace.get_text_document(uri).source != rewrite.original:
        return None
    before = rewrite.original.splitlines(keepends=True)
    after = rewrite.source.splitlines(keepends=True)
    first, tail = located.target.first_line - 1, len(before) - located.target.end_line
    same_tail = before[len(before) - tail :] == after[len(after) - tail :]
    if before[:first] != after[:first] or not same_tail:
        first, tail = 0, 0  # the rewrite reached outside the function: replace the whole text
    end = types.Position(line=len(before) - tail, character=0)
    if tail == 0 and before and not before[-1].endswith("\n"):  # up to the end of the text
        width = len(before[-1].encode("utf-16-le")) // 2
        end = types.Position(line=len(before) - 1, character=width)
    start = types.Position(line=first, character=0)
    text = "".join(after[first : len(after) - tail])
    change = types.TextEdit(range=types.Range(start, end), new_text=text)
    return types.WorkspaceEdit(changes={uri: [change]})


def _failed(ls: TorchscopeServer, located: Located, failure: ProfileFailure) -> dict[str, Any]:
    """The fix does not apply here: a warning, the function's results stay."""
    if failure.kind != "fix":
        target = located.target
        uri, source = located.args.uri, located.source
        return report_failure(ls, uri, failure, target.def_line, source, target)
    ls.show(types.MessageType.Warning, f"torchscope: {failure.message}")
    return {"ok": False, "error": failure.message, "kind": "fix"}


FIX_COMMAND: JobCommand[str, tuple[FixTrial, Rewrite]] = JobCommand(
    name=CMD_TRY_FIX,
    parse=_fix_id,
    title=lambda target, fix: f"Trying fix {fix} on {target.qualname}",
    start=_start,
    publish=_publish,
    done=lambda outcome: outcome[0].summary,
    failed=_failed,
)


def register(server: TorchscopeServer) -> None:
    FIX_COMMAND.register(server)
