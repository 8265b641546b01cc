"""Before and after in the editor: ``torchscope.diff`` and the re-profile comparison.

``torchscope.diff {uri, line, call?, rev?, steps?, warmup?, timeout_s?}`` (the **Compare with
last commit** lens; ``rev`` defaults to ``HEAD``) times the function on disk against the file
at ``rev`` in one worker job (``host.diff_run``). The current version's profile is published
like ``torchscope.profile``'s, with the comparison under ``report.diff``; the verdict is shown
as a message and becomes the lens title. Returns ``{ok, report}``.

**Re-profile**: when a function was profiled before in this session and its source has
changed since, ``before_edit`` re-runs the source kept from that run *interleaved* with the new
one (never a stored number) and the message says "x % faster than before the edit (±y %)".
"""

from __future__ import annotations

from typing import Any, Optional

from lsprotocol import types

from torchscope.host.diff_run import diff_function
from torchscope.host.git_source import GitError, source_at
from torchscope.host.profile_run import ProfileFailure
from torchscope.lsp.constants import CMD_DIFF
from torchscope.lsp.jobs import (
    BadArguments,
    Located,
    ProfileArgs,
    parse_args,
    prepare,
    publish_profile,
    refuse,
    report_failure,
    with_progress,
)
from torchscope.lsp.results import function_source
from torchscope.lsp.server import TorchscopeServer
from torchscope.targets import TargetError, function_named

BEFORE_THE_EDIT = "before the edit"


async def diff(ls: TorchscopeServer, arguments: tuple[Any, ...]) -> dict[str, Any]:
    try:
        args, raw = parse_args(CMD_DIFF, arguments)
        rev = raw.get("rev", "HEAD")
        if not isinstance(rev, str) or not rev.strip():
            raise BadArguments(f"{CMD_DIFF}: 'rev' must be a git revision, got {rev!r}")
    except BadArguments as exc:
        return refuse(ls, exc)
    located, failed = prepare(ls, args)
    if located is None:
        return failed or {"ok": False, "error": "no function"}
    try:
        before = source_at(located.path, rev)
    except GitError as exc:
        ls.show(types.MessageType.Error, f"torchscope: {exc}")
        return {"ok": False, "error": str(exc), "kind": "git"}
    data = await _run(ls, args, located, before, rev)
    if data is None or not data.get("ok"):
        return data or {"ok": False, "error": "cancelled"}
    return publish_profile(ls, args.uri, located, data["report"])


async def _run(
    ls: TorchscopeServer, args: ProfileArgs, located: Located, before: str, label: str
) -> Optional[dict[str, Any]]:
    """One diff job with progress; ``{ok, report}`` (not yet published), a failure, or None
    when cancelled."""
    target = located.target
    try:
        outcome, _ = await with_progress(
            ls,
            f"Comparing {target.qualname} with {label}",
            target.qualname,
            lambda on_progress, on_output: diff_function(
                ls.profiler,
                target,
                args.call,
                located.options,
                before,
                label,
                on_progress=on_progress,
                on_output=on_output,
            ),
            lambda outcome: str(outcome.diff["verdict"]["headline"]),
        )
    except ProfileFailure as failure:
        return report_failure(ls, args.uri, failure, target.def_line, located.source, target)
    if outcome is None:
        return None
    headline = outcome.diff["verdict"]["headline"]
    ls.show(types.MessageType.Info, f"torchscope: {target.qualname}: {headline}")
    ls.log(f"{target.qualname}: {headline}")
    report = outcome.profile.to_json()
    report["diff"] = outcome.diff
    return {"ok": True, "report": report}


def earlier_source(ls: TorchscopeServer, uri: str, located: Located) -> Optional[str]:
    """The file as it was at this function's last profile in this session, when the function
    itself has changed since (None otherwise)."""
    earlier = ls.results.latest(uri, located.target.qualname)
    if earlier is None or earlier.report is None or not earlier.synced_text:
        return None
    try:
        then = function_named(earlier.synced_text, str(located.path), located.target.qualname)
    except TargetError:
        return None
    target = located.target
    now = function_source(located.source, target.first_line, target.end_line)
    if function_source(earlier.synced_text, then.first_line, then.end_line) == now:
        return None
    return earlier.synced_text


async def before_edit(
    ls: TorchscopeServer, args: ProfileArgs, located: Located, earlier: str
) -> Optional[dict[str, Any]]:
    """Re-profile after an edit: the comparison with the earlier source, or None."""
    data = await _run(ls, args, located, earlier, BEFORE_THE_EDIT)
    if data is None or not data.get("ok"):
        return None
    diff: dict[str, Any] = data["report"]["diff"]
    return diff


def lens_title(report: Optional[dict[str, Any]]) -> str:
    """``41.9× faster than HEAD`` after a comparison, else the command's name."""
    diff = (report or {}).get("diff")
    if isinstance(diff, dict) and isinstance(diff.get("verdict"), dict):
        return str(diff["verdict"]["headline"]).split(" (", 1)[0]
    return "Compare with last commit"


def register(server: TorchscopeServer) -> None:
    @server.command(CMD_DIFF)
    async def diff_handler(ls: TorchscopeServer, *arguments: Any) -> dict[str, Any]:
        return await diff(ls, arguments)
