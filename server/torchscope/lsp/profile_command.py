"""``torchscope.profile {uri, line, call?, steps?, warmup?, timeout_s?, with_stack?}``.

Profiles the innermost function around ``line`` (0-based) in a worker, then publishes the
verdict as a diagnostic on the ``def`` line. Every failure — bad arguments, a syntax error, a
missing function or call expression, user code raising, a timeout — becomes an Error
diagnostic plus a message, and the server keeps serving. (The steps around the job are in
``jobs``, shared with the compare and sweep commands.)
"""

from __future__ import annotations

from typing import Any

from torchscope.host.profile_run import ProfileFailure, ProfileOutcome
from torchscope.lsp.constants import CMD_CLEAR, CMD_PROFILE
from torchscope.lsp.diff_command import before_edit, earlier_source
from torchscope.lsp.jobs import (
    BadArguments,
    ProfileArgs,
    prepare,
    publish_profile,
    refuse,
    report_failure,
    with_progress,
)
from torchscope.lsp.server import TorchscopeServer


async def profile(ls: TorchscopeServer, arguments: tuple[Any, ...]) -> dict[str, Any]:
    try:
        args = ProfileArgs.parse(arguments)
    except BadArguments as exc:
        return refuse(ls, exc)
    located, failed = prepare(ls, args)
    if located is None:
        return failed or {"ok": False, "error": "no function"}
    target = located.target
    earlier = earlier_source(ls, args.uri, located)

    def headline(outcome: ProfileOutcome) -> str:
        return str(outcome.report.verdict.headline)

    try:
        outcome, cancelled = await with_progress(
            ls,
            f"Profiling {target.qualname}",
            target.qualname,
            lambda on_progress, on_output: ls.profiler.profile(
                target, args.call, located.options, on_progress, on_output
            ),
            headline,
        )
    except ProfileFailure as failure:
        return report_failure(ls, args.uri, failure, target.def_line, located.source, target)
    if outcome is None:
        return {"ok": False, "error": cancelled or "cancelled"}
    data = outcome.to_json()
    if earlier is not None:  # re-profiled after an edit: measured against the earlier source
        data["diff"] = await before_edit(ls, args, located, earlier)
    return publish_profile(ls, args.uri, located, data)


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
