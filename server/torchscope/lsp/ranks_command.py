"""``torchscope.profileRanks {uri, line, nproc?, call?, backend?, steps?, warmup?, timeout_s?}``.

Profiles the function around ``line`` on ``nproc`` ranks under ``torch.distributed.run``
(``host/rank_profile.py``; ``nproc`` is the ``JobOptions`` field, so it arrives as an option;
0 or absent: the directive's ``nproc=N``, else 2). The slowest rank's profile is stored and
published like ``torchscope.profile``'s; its verdict diagnostic names the slowest rank, and the
``def`` hover adds the per-rank table and the cross-rank findings. A failing rank is an Error
diagnostic with that rank's traceback in the log. Returns ``{ok, report}`` (the
``profile --nproc N --json`` object).
"""

from __future__ import annotations

from typing import Any

from torchscope.host.rank_profile import RanksOutcome
from torchscope.lsp.constants import CMD_PROFILE_RANKS, NOTIFY_PROFILE_DONE
from torchscope.lsp.jobs import JobCommand, Located, OnOutput, OnProgress, store_result
from torchscope.lsp.results import Profile
from torchscope.lsp.server import TorchscopeServer
from torchscope.protocol import Output, to_builtins

DEFAULT_NPROC = 2


async def _start(
    ls: TorchscopeServer, located: Located, _: None, on_progress: OnProgress, on_output: OnOutput
) -> RanksOutcome:
    del on_progress  # the ranks report no per-pass progress to the editor
    hello = await ls.jobs.hello()
    options = located.options
    if options.nproc < 1:
        directive = located.target.directive_for(hello.cuda_available)
        nproc = directive.nproc if directive is not None and directive.nproc else DEFAULT_NPROC
        options = options.updated({"nproc": nproc})
    return await ls.jobs.profile_ranks(
        located.target,
        located.args.call,
        options,
        hello.cuda_available,
        lambda line: on_output(Output(0, "stderr", line + "\n")),
    )


def _publish(ls: TorchscopeServer, located: Located, done: RanksOutcome) -> dict[str, Any]:
    outcome = done.outcome
    kept = Profile(outcome.report, outcome.target.file, outcome.result.trace_path, ranks=done.view)
    store_result(ls, located.args.uri, located.source, located.target, report=kept)
    ls.refresh_views()
    report = to_builtins(done)
    ls.protocol.notify(NOTIFY_PROFILE_DONE, {"uri": located.args.uri, "report": report})
    return {"ok": True, "report": report}


RANKS_COMMAND: JobCommand[None, RanksOutcome] = JobCommand(
    name=CMD_PROFILE_RANKS,
    title=lambda target, _: f"Profiling {target.qualname} on several processes",
    start=_start,
    publish=_publish,
    done=lambda done: done.view.headline(),
)


def register(server: TorchscopeServer) -> None:
    RANKS_COMMAND.register(server)
