"""Before and after in the editor: ``torchscope.diff`` and the re-profile comparison.

``torchscope.diff {uri, line, call?, rev?, steps?, warmup?, timeout_s?}`` (the **Compare with
last commit** lens; ``rev`` defaults to ``HEAD``) times the function on disk against the file
at ``rev`` in one worker job (``host.diff_run``). The current version's profile is published
like ``torchscope.profile``'s, with the comparison under ``report.diff``; the verdict is shown
as a message and becomes the lens title. Returns ``{ok, report}``.

**Re-profile**: when a function was profiled before in this session and its source has
changed since, ``compare_with_earlier`` re-runs the file's text kept from that profile
*interleaved* with the new one (never a stored number); the message says "x % faster than
before the edit (±y %)".
"""

from __future__ import annotations

from typing import Any, Optional

from lsprotocol import types

from torchscope.analysis import Diff
from torchscope.host.diff_run import DiffJobKind, DiffOutcome
from torchscope.host.git_source import GitError
from torchscope.host.profile_run import ProfileFailure
from torchscope.lsp.constants import CMD_DIFF
from torchscope.lsp.jobs import (
    BadArguments,
    JobCommand,
    Located,
    OnOutput,
    OnProgress,
    publish_profile,
    report_failure,
)
from torchscope.lsp.results import Profile, function_source
from torchscope.lsp.server import TorchscopeServer

BEFORE_THE_EDIT = "before the edit"
LENS_TITLE = "Compare with last commit"


def _rev(raw: dict[str, Any]) -> str:
    rev = raw.get("rev", "HEAD")
    if not isinstance(rev, str) or not rev.strip():
        raise BadArguments(f"{CMD_DIFF}: 'rev' must be a git revision, got {rev!r}")
    return rev.strip()


async def _start(
    ls: TorchscopeServer, located: Located, rev: str, on_progress: OnProgress, on_output: OnOutput
) -> DiffOutcome:
    target, call = located.target, located.args.call
    try:
        return await ls.jobs.diff(target, call, rev, located.options, on_progress, on_output)
    except GitError as exc:
        raise ProfileFailure("git", str(exc)) from exc


def _say(ls: TorchscopeServer, qualname: str, diff: Diff) -> None:
    ls.show(types.MessageType.Info, f"torchscope: {qualname}: {diff.verdict.headline}")
    ls.log(f"{qualname}: {diff.verdict.headline}")


def _publish(ls: TorchscopeServer, located: Located, outcome: DiffOutcome) -> dict[str, Any]:
    _say(ls, located.target.qualname, outcome.diff)
    return publish_profile(ls, located, outcome.profile, outcome.diff)


def _failed(ls: TorchscopeServer, located: Located, failure: ProfileFailure) -> dict[str, Any]:
    """git could not give the earlier file: a message, and the function's results stay."""
    if failure.kind != "git":
        target = located.target
        uri, source = located.args.uri, located.source
        return report_failure(ls, uri, failure, target.def_line, source, target)
    ls.show(types.MessageType.Error, f"torchscope: {failure.message}")
    return {"ok": False, "error": failure.message, "kind": "git"}


DIFF_COMMAND: JobCommand[str, DiffOutcome] = JobCommand(
    name=CMD_DIFF,
    parse=_rev,
    title=lambda target, rev: f"Comparing {target.qualname} with {rev}",
    start=_start,
    publish=_publish,
    done=lambda outcome: outcome.diff.verdict.headline,
    failed=_failed,
)


def earlier_source(ls: TorchscopeServer, located: Located) -> Optional[str]:
    """The file as it was at this function's last profile in this session, when the function
    itself has changed since (None otherwise)."""
    earlier = ls.results.latest(located.args.uri, located.target.qualname)
    if earlier is None or earlier.report is None or not earlier.report.source:
        return None
    target = located.target
    if function_source(located.source, target.first_line, target.end_line) == (
        earlier.function_text
    ):
        return None
    return earlier.report.source


async def compare_with_earlier(
    ls: TorchscopeServer,
    located: Located,
    earlier: str,
    on_progress: OnProgress,
    on_output: OnOutput,
) -> Optional[Diff]:
    """Re-profile after an edit: the comparison with the earlier source, or None when it
    cannot be made (the profile stands on its own; the log says why)."""
    kind = DiffJobKind(earlier, BEFORE_THE_EDIT)
    target = located.target
    try:
        outcome = await ls.jobs.run(
            kind, target, located.args.call, located.options, on_progress, on_output
        )
    except ProfileFailure as failure:
        ls.log(f"{target.qualname}: no comparison with the earlier version: {failure.message}")
        return None
    _say(ls, target.qualname, outcome.diff)
    return outcome.diff


def lens_title(report: Optional[Profile], stale: bool) -> str:
    """``41.9× faster than HEAD`` after a comparison with a revision (until the function is
    edited), else the command's name."""
    if report is None or report.diff is None or stale or report.diff.label == BEFORE_THE_EDIT:
        return LENS_TITLE
    return report.diff.verdict.headline.split(" (", 1)[0]


def register(server: TorchscopeServer) -> None:
    DIFF_COMMAND.register(server)
