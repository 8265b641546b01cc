"""``torchscope.listJobs {}``: the running jobs whose agent listens (``torchscope jobs``), for
the editor's pick; ``torchscope.profileRunning {uri, line | qualname, pid, calls?,
timeout_s?}``: that job's next calls of the function profiled through its agent (``torchscope
attach``, docs/attach.md). The result is published as a profile's (the verdict on the ``def``
line, hints, hovers); the answer is ``{ok, report}`` with ``source: "attached"``, ``pid`` and
``attached`` in ``report``. Cancelling the progress restores the function in the job at once.
"""

from __future__ import annotations

from typing import Any

from torchscope.host.attach_run import AttachPart, job_age, job_command, list_jobs
from torchscope.lsp.constants import CMD_LIST_JOBS, CMD_PROFILE_RUNNING
from torchscope.lsp.jobs import (
    BadArguments,
    JobCommand,
    Located,
    OnOutput,
    OnProgress,
    publish_profile,
    refuse,
)
from torchscope.lsp.run_command import with_line
from torchscope.lsp.server import TorchscopeServer
from torchscope.protocol import to_builtins


def _parse(raw: dict[str, Any]) -> tuple[int, int]:
    pid, calls = raw.get("pid"), raw.get("calls", 5)
    if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0:
        raise BadArguments(f"{CMD_PROFILE_RUNNING}: 'pid' must be a process id, got {pid!r}")
    if not isinstance(calls, int) or isinstance(calls, bool) or calls < 1:
        raise BadArguments(f"{CMD_PROFILE_RUNNING}: 'calls' must be 1 or more, got {calls!r}")
    return pid, calls


async def _start(
    ls: TorchscopeServer, located: Located, asked: tuple[int, int], on: OnProgress, _: OnOutput
) -> AttachPart:
    pid, calls = asked
    return await ls.jobs.attach(pid, located.target, calls, located.options.timeout_s, on)


def _publish(ls: TorchscopeServer, located: Located, part: AttachPart) -> dict[str, Any]:
    answer = publish_profile(ls, located, part.profile)
    answer["report"].update(source=part.source, pid=part.pid, attached=to_builtins(part.attached))
    ls.log(f"{located.target.qualname}: {part.attached.mode_note} in pid {part.pid}")
    return answer


ATTACH_COMMAND: JobCommand[tuple[int, int], AttachPart] = JobCommand(
    name=CMD_PROFILE_RUNNING,
    parse=_parse,
    title=lambda target, asked: f"Profiling {target.qualname} in process {asked[0]}",
    start=_start,
    publish=_publish,
    done=lambda part: part.profile.report.verdict.headline,
)


async def _jobs() -> dict[str, Any]:
    found = await list_jobs()
    shown = [
        {**to_builtins(j), "command": job_command(j), "age_s": round(job_age(j), 1)} for j in found
    ]
    return {"ok": True, "jobs": shown}


def register(server: TorchscopeServer) -> None:
    @server.command(CMD_PROFILE_RUNNING)
    async def profile_running(ls: TorchscopeServer, *arguments: Any) -> dict[str, Any]:
        try:
            arguments = with_line(arguments, CMD_PROFILE_RUNNING)
        except BadArguments as exc:
            return refuse(ls, exc)
        return await ATTACH_COMMAND(ls, arguments)

    @server.command(CMD_LIST_JOBS)
    async def jobs(ls: TorchscopeServer, *arguments: Any) -> dict[str, Any]:
        return await _jobs()
