"""``torchscope.profileInRun {uri, line | qualname, entry, cwd?, env?, env_file?, calls?,
capture?, timeout_s?, …}``: the function profiled on the arguments a real program passes it
(``torchscope run``, docs/real-inputs.md).

``entry`` is the program, a command line (``"python train.py --steps 3"``) or its words
(``["pytest", "tests/test_x.py::test_y"]``), run from ``cwd`` (a launch configuration's: a
folder, relative to the workspace root or absolute), else from the workspace root, with
``env_file``'s variables and ``env``'s over them (a launch configuration's: the worker that runs
the program is started with them, over the server's ``env`` settings). The job is
the CLI's (``host.program_run.run_program``); ``$/progress`` says "waiting for the first
call", then "calls seen: N of M", then the profile's passes. The result is published as a
profile's (the verdict on the ``def`` line, the line diagnostics); the answer is ``{ok,
report}`` with the ``run`` object in ``report``. The program exiting before the call, a target
never found, a timeout and a ``cwd`` that is no folder are each one error message (and an
error diagnostic on the ``def``), as for a profile.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from lsprotocol import types
from pygls.uris import to_fs_path

from torchscope.host.env_file import EnvFileError, environment
from torchscope.host.profile_run import ProfileFailure
from torchscope.host.program_run import RunOutcome, TargetRun
from torchscope.lsp.constants import CMD_PROFILE_IN_RUN
from torchscope.lsp.jobs import (
    BadArguments,
    JobCommand,
    Located,
    OnOutput,
    OnProgress,
    publish_profile,
    refuse,
)
from torchscope.lsp.server import TorchscopeServer
from torchscope.lsp.settings import Settings
from torchscope.protocol import RunOptions, to_builtins
from torchscope.source.targets import TargetError, function_named, read_source

Ran = tuple[RunOutcome, TargetRun]


@dataclass(frozen=True)
class RunArgs:
    entry: list[str]
    run: RunOptions  # ``calls``, ``mode``, ``capture``…: checked by ``RunOptions.updated``
    cwd: Optional[str] = None
    env: Mapping[str, str] = field(default_factory=dict)  # the launch configuration's
    env_file: Optional[str] = None


def _parse(raw: dict[str, Any]) -> RunArgs:
    entry, cwd = raw.get("entry"), raw.get("cwd")
    try:
        words = shlex.split(entry) if isinstance(entry, str) else entry
    except ValueError as exc:
        raise BadArguments(f"{CMD_PROFILE_IN_RUN}: 'entry' is not a command line: {exc}") from exc
    if not words or not isinstance(words, list) or not all(isinstance(w, str) for w in words):
        raise BadArguments(
            f"{CMD_PROFILE_IN_RUN}: 'entry' must be the program, as a command line or its words: "
            f"python train.py ARGS…, -m module ARGS… or pytest TEST — got {entry!r}"
        )
    if cwd is not None and (not isinstance(cwd, str) or not cwd.strip()):
        raise BadArguments(f"{CMD_PROFILE_IN_RUN}: 'cwd' must be a folder's path, got {cwd!r}")
    try:
        run = RunOptions().updated(raw)
        env = Settings().updated({k: raw[k] for k in ("env", "env_file") if k in raw})
    except ValueError as exc:
        raise BadArguments(f"{CMD_PROFILE_IN_RUN}: {exc}") from exc
    return RunArgs(words, run, cwd, env.env, env.env_file)


def _folder(ls: TorchscopeServer, run: RunArgs, line: int) -> Optional[Path]:
    """The program's working directory: ``cwd`` (relative to the workspace root), else the
    root (where the worker runs)."""
    root = ls.workspace_root()
    if run.cwd is None:
        return root
    folder = (root or Path.cwd()) / Path(run.cwd).expanduser()
    if not folder.is_dir():
        message = f"cwd {folder}: no such folder — fix the launch configuration's cwd"
        raise ProfileFailure("entry", message, line)
    return folder.resolve()


async def _start(
    ls: TorchscopeServer, located: Located, run: RunArgs, on_progress: OnProgress, on_out: OnOutput
) -> Ran:
    target = located.target
    folder = _folder(ls, run, target.def_line)
    try:
        entry = ls.jobs.entry(run.entry, folder)
    except ValueError as exc:
        raise ProfileFailure("entry", str(exc), target.def_line) from exc
    cwd = folder if run.cwd is not None else None
    try:  # the launch configuration's envFile, then its env
        env = environment(run.env, run.env_file, ls.workspace_root())
    except EnvFileError as exc:
        message = f"{exc} — fix the launch configuration's envFile"
        raise ProfileFailure("entry", message, target.def_line) from exc
    outcome = await ls.jobs.run_program(
        [target], entry, run.run, located.options, cwd, on_progress, on_out, env
    )
    [part] = outcome.targets
    if part.outcome is None:
        assert part.failure is not None
        raise part.failure
    return outcome, part


def _publish(ls: TorchscopeServer, located: Located, ran: Ran) -> dict[str, Any]:
    outcome, part = ran
    assert part.outcome is not None
    if part.capture and part.capture.message:
        ls.show(types.MessageType.Warning, f"torchscope: {part.capture.message}")
    answer = publish_profile(ls, located, part.outcome)
    answer["report"]["run"] = to_builtins(outcome.shown(part).run)
    ls.log(f"{located.target.qualname}: {part.calls_seen} calls seen in `{outcome.entry}`")
    for note in (part.timing_note, part.mode_note):
        if note:
            ls.show(types.MessageType.Info, f"torchscope: {note}")
    return answer


RUN_COMMAND: JobCommand[RunArgs, Ran] = JobCommand(
    name=CMD_PROFILE_IN_RUN,
    parse=_parse,
    title=lambda target, run: f"Profiling {target.qualname} in `{shlex.join(run.entry)}`",
    start=_start,
    publish=_publish,
    done=lambda ran: ran[1].outcome.report.verdict.headline if ran[1].outcome else "done",
)


def with_line(arguments: tuple[Any, ...], command: str = CMD_PROFILE_IN_RUN) -> tuple[Any, ...]:
    """``{qualname}`` instead of ``{line}``: the line of that function's ``def`` (``command``
    names the command in the message when there is no such function)."""
    if len(arguments) != 1 or not isinstance(arguments[0], dict):
        return arguments
    raw = arguments[0]
    uri, qualname = raw.get("uri"), raw.get("qualname")
    if "line" in raw or not isinstance(uri, str) or not isinstance(qualname, str):
        return arguments
    try:
        path = Path(to_fs_path(uri) or "")
        target = function_named(read_source(path), str(path), qualname)
    except TargetError as exc:
        raise BadArguments(f"{command}: {exc}") from exc
    return ({**raw, "line": target.def_line - 1},)


def register(server: TorchscopeServer) -> None:
    @server.command(CMD_PROFILE_IN_RUN)
    async def handler(ls: TorchscopeServer, *arguments: Any) -> dict[str, Any]:
        try:
            arguments = with_line(arguments)
        except BadArguments as exc:
            return refuse(ls, exc)
        return await RUN_COMMAND(ls, arguments)
