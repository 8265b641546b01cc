"""``torchscope.profile {uri, line, call?, steps?, warmup?, timeout_s?, with_stack?}``.

Profiles the innermost function around ``line`` (0-based) in a worker, then publishes the
verdict as a diagnostic on the ``def`` line. Every failure — bad arguments, a syntax error, a
missing function or call expression, user code raising, a timeout — becomes an Error
diagnostic plus a message, and the server keeps serving. (The steps around the job are the
``JobCommand`` of ``jobs``, shared with the compare and sweep commands.) A re-profile after
the function was edited also compares it with the file's text at the previous profile, both
run again interleaved (``diff_command.compare_with_earlier``), under ``report.diff``.
"""

from __future__ import annotations

from typing import Any, Optional

from torchscope.analysis import Diff
from torchscope.host.profile_run import PROFILE, ProfileOutcome
from torchscope.lsp.constants import CMD_CLEAR, CMD_PROFILE
from torchscope.lsp.diff_command import compare_with_earlier, earlier_source
from torchscope.lsp.jobs import JobCommand, Located, OnOutput, OnProgress, publish_profile
from torchscope.lsp.server import TorchscopeServer

Profiled = tuple[ProfileOutcome, Optional[Diff]]


async def _profile(
    ls: TorchscopeServer, located: Located, _: None, on_progress: OnProgress, on_output: OnOutput
) -> Profiled:
    """The profile; after an edit of a function profiled earlier in this session, also the
    comparison with the earlier source (a second job, both versions interleaved)."""
    earlier = earlier_source(ls, located)
    outcome = await ls.jobs.run(
        PROFILE, located.target, located.args.call, located.options, on_progress, on_output
    )
    if earlier is None:
        return outcome, None
    return outcome, await compare_with_earlier(ls, located, earlier, on_progress, on_output)


PROFILE_COMMAND: JobCommand[None, Profiled] = JobCommand(
    name=CMD_PROFILE,
    title=lambda target, _: f"Profiling {target.qualname}",
    start=_profile,
    publish=lambda ls, located, done: publish_profile(ls, located, done[0], done[1]),
    done=lambda done: (done[1].verdict if done[1] else done[0].report.verdict).headline,
)


def clear(ls: TorchscopeServer, arguments: tuple[Any, ...]) -> dict[str, Any]:
    uri = arguments[0].get("uri") if arguments and isinstance(arguments[0], dict) else None
    for cleared in ls.results.clear(uri if isinstance(uri, str) else None):
        ls.publish(cleared)
    ls.refresh_views()
    return {"ok": True}


def register(server: TorchscopeServer) -> None:
    PROFILE_COMMAND.register(server)

    @server.command(CMD_CLEAR)
    def clear_handler(ls: TorchscopeServer, *arguments: Any) -> dict[str, Any]:
        return clear(ls, arguments)
