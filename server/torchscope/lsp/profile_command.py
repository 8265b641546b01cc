"""``torchscope.profile {uri, line, call?, steps?, warmup?, timeout_s?, with_stack?}``.

Profiles the innermost function around ``line`` (0-based) in a worker, then publishes the
verdict as a diagnostic on the ``def`` line. Every failure — bad arguments, a syntax error, a
missing function or call expression, user code raising, a timeout — becomes an Error
diagnostic plus a message, and the server keeps serving. (The steps around the job are the
``JobCommand`` of ``jobs``, shared with the compare and sweep commands.)
"""

from __future__ import annotations

from typing import Any

from torchscope.host.profile_run import PROFILE, ProfileOutcome
from torchscope.lsp.constants import CMD_CLEAR, CMD_PROFILE
from torchscope.lsp.jobs import JobCommand, publish_profile
from torchscope.lsp.server import TorchscopeServer

PROFILE_COMMAND: JobCommand[None, ProfileOutcome] = JobCommand(
    name=CMD_PROFILE,
    title=lambda target, _: f"Profiling {target.qualname}",
    start=lambda ls, located, _, on_progress, on_output: ls.profiler.run_job(
        PROFILE, located.target, located.args.call, located.options, on_progress, on_output
    ),
    publish=lambda ls, located, outcome: publish_profile(ls, located, outcome),
    done=lambda outcome: str(outcome.report.verdict.headline),
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
