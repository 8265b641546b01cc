"""``torchscope mcp``: an MCP server on stdio, so a coding agent can profile the function the
user points at.

Tools: ``profile_function``, ``profile_in_run`` (``torchscope run``: the function on the
arguments a real program passes it), ``profile_running`` (``torchscope attach``: a job
already running), ``analyze_trace``, ``compare_compile``,
``explain_finding`` and ``try_fix`` (a measured fix, as ``torchscope fix --try ID --json``; it
never writes a file).
Each returns the same object as the CLI's ``--json`` as structured content, plus a short text
summary for the model (``report.mcp_summary``). The user's code runs only in the worker,
through the host's job service (``host/session.py``) as in ``torchscope profile``, with the
same timeouts and messages; a failure is an error result (``isError``) naming the problem, and
the server keeps serving. A trace is
analysed in a child process (``host/trace_analysis.py``), so no trace can take the server down.

Imported only by the ``mcp`` subcommand: the MCP SDK is an optional extra (``torchscope[mcp]``)
and the other commands should not pay for importing it.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import sys
from pathlib import Path
from typing import IO, Annotated, Any, Callable, Optional, Protocol, TypeVar, cast

from mcp.server.mcpserver import MCPServer
from mcp.types import CallToolResult, ContentBlock, TextContent
from pydantic import Field

from torchscope._version import __version__
from torchscope.analysis import TraceError
from torchscope.host.compare_run import COMPARE
from torchscope.host.fix_run import FixNotApplicable
from torchscope.host.profile_run import PROFILE, HostJob, ProfileFailure
from torchscope.host.session import JobService
from torchscope.mcp_edge import MarkedLines, lone_surrogate_refusal
from torchscope.protocol import JobOptions, RunOptions, to_builtins
from torchscope.report.mcp_summary import (
    compare_summary,
    explain,
    output_tail,
    profile_summary,
    report_summary,
)
from torchscope.source.fixes import FIXES, fix_by_id
from torchscope.source.targets import Target, TargetError

log = logging.getLogger(__name__)

INSTRUCTIONS = (
    "torchscope profiles one PyTorch function with torch.profiler and says why it is slow: a "
    "verdict (compute-, overhead-, input-, sync- or copy-bound) with its numbers, findings "
    "sorted by cost, the hot lines and the trace file. profile_function runs the user's code "
    "in a separate worker process (file, qualname, and a call expression when the function "
    "needs arguments and has no `# torchscope:` directive above its def). profile_in_run runs "
    "a program (a script, a module or a pytest test) and profiles the function on the "
    "arguments the program really passes it (a model's forward, a loss). profile_running "
    "profiles the next calls of a function in a job already running (pid, FILE::QUALNAME). "
    "compare_compile measures eager against torch.compile; analyze_trace reads a trace "
    "recorded elsewhere; "
    "explain_finding(rule) returns the documentation of a finding or verdict id. try_fix "
    "measures one rewrite (a fix id: sdpa, zero-grad-none, …, named by a finding's fix.rule) "
    "against the original and checks their outputs; it returns the patch and writes nothing."
)


class JobOutcome(Protocol):
    """What every job kind's outcome offers the MCP tools."""

    output: list[str]


JobOutcomeT = TypeVar("JobOutcomeT", bound=JobOutcome)


def _text(*parts: str) -> list[ContentBlock]:
    return [TextContent(type="text", text="\n\n".join(p for p in parts if p))]


def _ok(data: dict[str, Any], summary: str) -> CallToolResult:
    return CallToolResult(content=_text(summary), structured_content=data)


def _error(message: str, detail: str = "") -> CallToolResult:
    return CallToolResult(content=_text(message, detail), is_error=True)


def open_service(python: str, timeout_s: float, trace_dir: Optional[Path]) -> JobService:
    """The job service: one long-lived worker, one job at a time, targets and traces relative
    to the workspace (this process's folder), ``timeout_s`` per job; the worker's stderr goes
    to ours (never stdout: the protocol's)."""
    root = str(Path.cwd())
    return JobService(
        python,
        trace_dir,
        cwd=root,
        on_worker_stderr=lambda line: print(line, file=sys.stderr),
        defaults=JobOptions(timeout_s=timeout_s, workspace_root=root),
    )


async def _job(
    service: JobService,
    kind: HostJob[Any, JobOutcomeT],
    where: tuple[str, str, Optional[str]],
    overrides: dict[str, Any],
    summary: Callable[[JobOutcomeT], str],
) -> CallToolResult:
    """One job of ``kind`` on ``(file, qualname, call)``: its ``--json`` object and
    ``summary`` of it, or an error result naming the problem."""
    file, qualname, call = where
    try:
        target = await asyncio.to_thread(service.target, file, qualname)  # reads the file
        options = service.options(overrides)
    except (TargetError, ValueError) as exc:
        return _error(str(exc))
    try:
        outcome = await service.run(kind, target, call, options)
    except ProfileFailure as failure:
        return _failure(target, failure)
    text = "\n\n".join(p for p in (summary(outcome), output_tail(outcome.output)) if p)
    return _ok(to_builtins(outcome), text)


def _failure(target: Target, failure: ProfileFailure) -> CallToolResult:
    detail = failure.traceback.strip()
    return _error(f"{failure.kind}: {failure.where(target.file)}: {failure.message}", detail)


File = Annotated[str, Field(description="the Python file, absolute or relative to the workspace")]
Qualname = Annotated[str, Field(description="the function's qualified name: fn, Model.forward")]
Call = Annotated[
    Optional[str],
    Field(
        description="call expression evaluated in the module, e.g. "
        "'fn(torch.randn(8, 8), torch.randn(8, 8), torch.randn(8, 8))'; default: the first "
        "`# torchscope:` directive above the def, or fn() when it needs no arguments"
    ),
]
#: The most calls an agent may ask for in one tool call (``steps``, ``warmup``, ``calls``): a
#: bound for the model's arguments, not an option's limit (the CLI has none).
AGENT_MAX_CALLS = 100


def _param(options: type[Any], name: str) -> Any:
    """A tool parameter's description and limits, from the ``JobOptions``/``RunOptions`` field
    ``name`` (its help, default, minimum and choices: restated nowhere)."""
    spec = {f.name: f for f in dataclasses.fields(options)}[name]
    meta = spec.metadata
    limits: dict[str, Any] = {}
    if type(spec.default) is int:
        limits = {"ge": meta.get("minimum"), "le": AGENT_MAX_CALLS}
    choices = meta.get("choices")
    return Field(
        description=f"{meta['help']} (default {spec.default})"
        + (f": one of {', '.join(choices)}" if choices else ""),
        json_schema_extra={"enum": list(choices)} if choices else None,
        **limits,
    )


Steps = Annotated[Optional[int], _param(JobOptions, "steps")]
Warmup = Annotated[Optional[int], _param(JobOptions, "warmup")]
CompileMode = Annotated[str, _param(JobOptions, "compile_mode")]
Calls = Annotated[int, _param(RunOptions, "calls")]
Capture = Annotated[bool, _param(RunOptions, "capture")]
CallMode = Annotated[str, _param(RunOptions, "mode")]


def _add_job_tools(server: MCPServer, jobs: JobService) -> None:
    @server.tool()
    async def profile_function(
        file: File,
        qualname: Qualname,
        call: Call = None,
        steps: Steps = None,
        warmup: Warmup = None,
    ) -> CallToolResult:
        """Profile one PyTorch function in a worker process: the verdict with its numbers,
        findings by cost, hot lines, top ops and the trace path (the `torchscope profile
        --json` object)."""
        asked = {"steps": steps, "warmup": warmup}
        return await _job(jobs, PROFILE, (file, qualname, call), asked, profile_summary)

    @server.tool()
    async def compare_compile(
        file: File,
        qualname: Qualname,
        call: Call = None,
        mode: CompileMode = JobOptions.compile_mode,
        steps: Steps = None,
    ) -> CallToolResult:
        """Profile a function eagerly and as torch.compile(fn) in one worker job and compare
        them: time per call, ops, copies, the compile time and a keep-eager / compile-wins /
        no-difference verdict (the `torchscope profile --compare-compile --json` object)."""
        asked = {"steps": steps, "compile_mode": mode}
        return await _job(jobs, COMPARE, (file, qualname, call), asked, compare_summary)


def _add_fix_tool(server: MCPServer, jobs: JobService) -> None:
    @server.tool()
    async def try_fix(
        file: File,
        qualname: Qualname,
        fix: Annotated[str, Field(description="a fix id: " + ", ".join(f.id for f in FIXES))],
        call: Call = None,
    ) -> CallToolResult:
        """Measure one fix on a function: rewrite a scratch copy, time it against the original
        interleaved in one worker job, and check what the program depends on (outputs,
        requires_grad, gradients of a backward pass, buffers and module state). Returns {id,
        verdict, ratio (times faster), interval, same_outputs, patch (unified diff), refused,
        message, assumes, checks, unchecked} (the `torchscope fix --try ID --json` object).
        Writes no file: apply the patch yourself, and only when refused is null (faster, and
        nothing checked changed)."""
        if fix_by_id(fix) is None:
            return _error(f"no fix {fix!r} — fixes: {', '.join(f.id for f in FIXES)}")
        try:
            target = await asyncio.to_thread(jobs.target, file, qualname)
        except TargetError as exc:
            return _error(str(exc))
        try:
            trial, _ = await jobs.try_fix(target, call, fix)
        except FixNotApplicable as exc:
            return _error(str(exc))
        except ProfileFailure as failure:
            return _failure(target, failure)
        data = {**to_builtins(trial), "applied": False}
        unchecked = "".join(f"\nnot checked: {item}" for item in trial.unchecked)
        return _ok(data, f"{trial.id} on {qualname}: {trial.summary}{unchecked}\n\n{trial.patch}")


async def _run_program(
    jobs: JobService, targets: list[str], entry: list[str], run: RunOptions
) -> CallToolResult:
    try:
        found = await asyncio.to_thread(jobs.targets, targets)
        outcome = await jobs.run_program(found, jobs.entry(entry), run)
    except (TargetError, ValueError) as exc:
        return _error(str(exc))
    except ProfileFailure as failure:
        return _failure(found[0], failure)
    parts, texts = [], []
    for part in outcome.targets:
        if part.outcome is not None:
            parts.append(to_builtins(outcome.shown(part)))
            texts.append(profile_summary(part.outcome))
            texts.append(f"calls seen: {part.calls_seen}, in-run cold {part.cold_us:.0f} µs")
            texts += [note for note in (part.timing_note, part.mode_note) if note]
        else:
            assert part.failure is not None
            where = part.failure.where(part.target.file)
            parts.append(
                {
                    "target": {"file": part.target.file, "qualname": part.target.qualname},
                    "error": {"kind": part.failure.kind, "message": part.failure.message},
                }
            )
            texts.append(f"{part.failure.kind}: {where}: {part.failure.message}")
    texts.append(
        f"the program `{outcome.entry}` {outcome.exit}"
        + (f" (exit code {outcome.exit_code})" if outcome.exit_code is not None else "")
        + (f", test {outcome.test}" if outcome.test else "")
    )
    return _ok({"targets": parts}, "\n\n".join(texts))


def _add_run_tool(server: MCPServer, jobs: JobService) -> None:
    @server.tool()
    async def profile_in_run(
        targets: Annotated[
            list[str],
            Field(description="functions as FILE::QUALNAME, e.g. model.py::Attention.forward"),
        ],
        entry: Annotated[
            list[str],
            Field(
                description="the program, as words: ['python', 'train.py', '--steps', '3'], "
                "['-m', 'pkg.train'] or ['pytest', 'tests/test_x.py::test_y']"
            ),
        ],
        calls: Calls = RunOptions.calls,
        capture: Capture = RunOptions.capture,
        mode: CallMode = RunOptions.mode,
    ) -> CallToolResult:
        """Run a program in a worker and profile each target on the arguments the program
        really passes it; the program is stopped once every target is profiled (a pytest test
        runs to its end). One `torchscope run --json` object per target, under `targets`;
        `run.calls` lists the calls profiled (training, grad_enabled, caller, faults, shapes),
        `run.mode_note` says when the program's calls differ in mode (then pass `mode`), and
        `run.timing_note` why the timed call and the program's calls took other times, when
        they differ beyond the noise."""
        try:
            run = RunOptions().updated({"calls": calls, "capture": capture, "mode": mode})
        except ValueError as exc:
            return _error(str(exc))
        return await _run_program(jobs, targets, entry, run)


def _add_attach_tool(server: MCPServer, jobs: JobService) -> None:
    @server.tool()
    async def profile_running(
        pid: Annotated[int, Field(description="the running job's process id (torchscope jobs)")],
        target: Annotated[
            str, Field(description="the function as FILE::QUALNAME, e.g. model.py::Net.forward")
        ],
        calls: Annotated[int, Field(ge=1, le=AGENT_MAX_CALLS)] = 5,
    ) -> CallToolResult:
        """Profile a function in a job that is already running (its torchscope agent
        listening: started with `python -m torchscope.agent` or TORCHSCOPE_AGENT=1): its next
        `calls` calls are timed, the `calls` after them profiled, on the job's own arguments,
        and the function restored; the job's results do not change. The `torchscope attach
        --json` object: the profile's fields plus `source: "attached"`, `pid` and `attached`
        (the calls' modes)."""
        try:
            found = jobs.targets([target])[0]
            part = await jobs.attach(pid, found, calls)
        except TargetError as exc:
            return _error(str(exc))
        except ProfileFailure as failure:
            return _failure(found, failure)
        summary = f"{profile_summary(part.profile)}\n\n{part.attached.mode_note} in pid {pid}"
        return _ok(to_builtins(part), summary)


def _add_trace_tools(server: MCPServer, jobs: JobService) -> None:
    @server.tool()
    async def analyze_trace(
        path: Annotated[str, Field(description="a torch.profiler Chrome trace, .json or .json.gz")],
    ) -> CallToolResult:
        """Analyse a trace recorded elsewhere (torch.profiler's export_chrome_trace): verdict and
        findings (the `torchscope analyze --json` object). Runs no user code."""
        trace = jobs.root / Path(path).expanduser()  # an absolute path stays as it is
        try:
            report = await jobs.analyzer.analyze(str(trace))
        except TraceError as exc:
            return _error(str(exc))
        data = to_builtins(report)
        data["trace_path"] = str(trace)
        return _ok(data, report_summary(report, str(trace)))

    @server.tool()
    def explain_finding(
        rule: Annotated[str, Field(description="a finding's rule or a verdict id, e.g. sync")],
    ) -> CallToolResult:
        """What a finding or verdict means, its threshold, what to do about it and where the rule
        comes from: its section of torchscope's findings reference."""
        section, where = explain(rule)
        if section is None:
            return _error(where)
        return _ok({"rule": rule.strip(), "docs": where, "text": section}, section)


class _EdgeServer(MCPServer):
    """The SDK's server, refusing at its edge a tool call whose arguments held a lone
    surrogate (one error result; no tool sees it, and no reply echoes it)."""

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        refused = lone_surrogate_refusal({"name": name, "arguments": arguments})
        if refused is not None:
            return _error(refused)
        return await super().call_tool(name, arguments, context)


def build_server(jobs: JobService) -> MCPServer:
    server: MCPServer = _EdgeServer(
        "torchscope", version=__version__, instructions=INSTRUCTIONS, log_level="WARNING"
    )
    _add_job_tools(server, jobs)
    _add_fix_tool(server, jobs)
    _add_run_tool(server, jobs)
    _add_attach_tool(server, jobs)
    _add_trace_tools(server, jobs)
    return server


async def serve(jobs: JobService) -> None:
    """``run_stdio_async`` with our stdin (``mcp_edge.MarkedLines``); the SDK's low-level
    server, as that method runs it."""
    from anyio import wrap_file
    from mcp.server.stdio import stdio_server

    jobs.analyzer.prestart()
    try:
        server = build_server(jobs)
        lowlevel = server._lowlevel_server
        stdin = wrap_file(cast("IO[str]", MarkedLines()))  # what it calls: readline, close
        async with stdio_server(stdin=stdin) as (read, write):
            await lowlevel.run(read, write, lowlevel.create_initialization_options())
    finally:
        await jobs.close()


def run_mcp(python: str, timeout_s: float, trace_dir: Optional[Path]) -> int:
    """``torchscope mcp``: serve on stdin/stdout until the client closes them."""
    asyncio.run(serve(open_service(python, timeout_s, trace_dir)))
    return 0
