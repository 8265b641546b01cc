"""The job service every face (the CLI, the language server, the MCP server) runs its jobs
through, so that each face only parses its own input and presents the outcome.

A :class:`JobService` resolves a target (``file`` + ``qualname`` or a ``FILE::QUALNAME`` spec,
with ``targets.read_target``'s one ``TargetError`` message; the editor's function at a line is
``targets.target_at``), derives a job's options
(``JobOptions``' defaults, the face's base, the request's overrides; ``RunOptions`` for a run),
runs a job kind with progress and output callbacks (cancelling the awaiting task kills the job;
the options' ``timeout_s`` bounds it) and closes the worker and the analysis child. It is the
one place a :class:`~torchscope.host.profile_run.Profiler` is built: the interpreter, where
traces are kept (and how many), the working directory, where the worker's stderr goes, and the
analysis child its traces go to (a server shares its Open-trace child).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Optional, TypeVar

from torchscope.host import process_tree
from torchscope.host.profile_run import HostJob, Profiler
from torchscope.host.trace_analysis import TraceAnalyzer
from torchscope.host.trace_store import DEFAULT_KEEP, Retention, TraceStore
from torchscope.protocol import Hello, JobOptions, Output, Progress, RunOptions
from torchscope.source.targets import Target, TargetError, read_target

if TYPE_CHECKING:
    from torchscope.host.attach_run import AttachPart
    from torchscope.host.diff_run import DiffOutcome
    from torchscope.host.program_run import Entry, RunOutcome
    from torchscope.host.rank_profile import RanksOutcome
    from torchscope.source.fixes import Rewrite
    from torchscope.source.fixes.trial import FixTrial

OutcomeT = TypeVar("OutcomeT")
OnProgress = Optional[Callable[[Progress], None]]
OnOutput = Optional[Callable[[Output], None]]


class JobService:
    """One face's jobs: a worker for ``python`` (one job at a time; it starts at the first
    job, or ``warm``), the analysis child, the base options (``defaults``) and the folder
    relative targets start from (``cwd``). Traces go to ``trace_dir`` (default: the
    workspace's folder in the cache), kept by ``retention``'s age and size (default: the
    environment's, else 7 days or 2 GB); ``keep_traces`` folders of rank traces and charts."""

    def __init__(
        self,
        python: str,
        trace_dir: Optional[Path] = None,
        keep_traces: int = DEFAULT_KEEP,
        cwd: Optional[str] = None,
        on_worker_stderr: Optional[Callable[[str], None]] = None,
        analyzer: Optional[TraceAnalyzer] = None,
        defaults: Optional[JobOptions] = None,
        retention: Optional[Retention] = None,
        env: Optional[Mapping[str, str]] = None,
    ) -> None:
        self.root = Path(cwd) if cwd else Path.cwd()
        self.profiler = Profiler(
            python,
            TraceStore(trace_dir, keep_traces, retention),
            cwd=cwd,
            on_worker_stderr=on_worker_stderr,
            analyzer=analyzer,
            env=env,
        )
        self.analyzer = self.profiler.analyzer
        self.defaults = defaults or JobOptions(workspace_root=str(self.root))

    def target(self, file: str, qualname: str) -> Target:
        """``qualname`` in ``file`` (relative to ``cwd``); ``TargetError`` says why not."""
        return read_target(f"{file}::{qualname}", self.root)[1]

    def targets(self, specs: list[str]) -> list[Target]:
        """``FILE::QUALNAME`` each (relative to ``cwd``); at least one."""
        found = [read_target(spec, self.root)[1] for spec in specs]
        if not found:
            raise TargetError("name at least one target: FILE::QUALNAME")
        return found

    def options(
        self, overrides: Optional[Mapping[str, Any]] = None, base: Optional[JobOptions] = None
    ) -> JobOptions:
        """``base`` (default: the service's) with the request's ``overrides`` (None: the
        default); ``ValueError`` names a bad one."""
        return (base or self.defaults).updated(overrides or {})

    async def hello(self) -> Hello:
        return await self.profiler.hello()

    async def run(
        self,
        kind: HostJob[Any, OutcomeT],
        target: Target,
        call: Optional[str],
        options: Optional[JobOptions] = None,
        on_progress: OnProgress = None,
        on_output: OnOutput = None,
    ) -> OutcomeT:
        """One job of ``kind``; ``ProfileFailure`` says why it failed (timeout included)."""
        return await self.profiler.run_job(
            kind, target, call, options or self.defaults, on_progress, on_output
        )

    def entry(self, words: list[str], cwd: Optional[Path] = None) -> Entry:
        """The program of a run: ``python script.py ARGS…`` (a script relative to ``cwd``, else
        the service's folder), ``-m module ARGS…`` or ``pytest ARGS…``; ``ValueError`` says
        what is accepted."""
        from torchscope.host.program_run import parse_entry

        return parse_entry(words, cwd or self.root)

    async def run_program(
        self,
        targets: list[Target],
        entry: Entry,
        run: RunOptions,
        options: Optional[JobOptions] = None,
        cwd: Optional[Path] = None,
        on_progress: OnProgress = None,
        on_output: OnOutput = None,
        env: Optional[Mapping[str, str]] = None,
    ) -> RunOutcome:
        """``torchscope run``: the program ``entry``, run in ``cwd`` (default: the worker's),
        with ``targets`` profiled on its calls, and ``env`` (a launch configuration's) over
        the service's variables; ``ProfileFailure``: the job failed."""
        from torchscope.host.program_run import RunJobKind, run_program

        kind = RunJobKind(targets, entry, run, cwd=str(cwd) if cwd else "", env=env)
        chosen = options or self.defaults
        return await run_program(self.profiler, kind, chosen, on_progress, on_output)

    async def diff(
        self,
        target: Target,
        call: Optional[str],
        rev: str,
        options: Optional[JobOptions] = None,
        on_progress: OnProgress = None,
        on_output: OnOutput = None,
    ) -> DiffOutcome:
        """The function now against its file at git revision ``rev``; raises ``GitError`` or
        ``ProfileFailure`` with the user's message."""
        from torchscope.host.diff_run import DiffJobKind
        from torchscope.host.git_source import source_at

        kind = DiffJobKind(source_at(Path(target.file), rev), rev)
        return await self.run(kind, target, call, options, on_progress, on_output)

    async def try_fix(
        self,
        target: Target,
        call: Optional[str],
        fix_id: str,
        options: Optional[JobOptions] = None,
        on_progress: OnProgress = None,
    ) -> tuple[FixTrial, Rewrite]:
        """A measured fix (``host/fix_run.py``); raises ``FixNotApplicable`` or
        ``ProfileFailure``."""
        from torchscope.host.fix_run import try_fix

        chosen = options or self.defaults
        return await try_fix(self.profiler, target, call, chosen, fix_id, on_progress)

    async def profile_ranks(
        self,
        target: Target,
        call: Optional[str],
        options: JobOptions,
        cuda_available: bool,
        on_line: Callable[[str], None] = lambda line: None,
    ) -> RanksOutcome:
        """``options.nproc`` ranks under ``torch.distributed.run`` (``host/rank_profile.py``),
        with this service's interpreter, trace folder and working directory."""
        from torchscope.host.rank_profile import profile_ranks

        profiler = self.profiler
        return await profile_ranks(
            profiler.python,
            profiler.trace_store,
            target,
            call,
            options,
            cuda_available,
            profiler.cwd,
            on_line,
        )

    async def attach(
        self,
        pid: int,
        target: Target,
        calls: int,
        timeout_s: Optional[float] = None,
        on_progress: OnProgress = None,
    ) -> AttachPart:
        """``torchscope attach``: the running job ``pid``'s next calls of ``target``, through
        its agent, analysed in this service's analysis child (``host/attach_run.py``)."""
        from torchscope.host.attach_run import attach

        wait = self.defaults.timeout_s if timeout_s is None else timeout_s
        store = self.profiler.trace_store
        return await attach(pid, target, calls, store, self.analyzer, wait, on_progress)

    async def close(self) -> None:
        """Stop the worker (and the analysis child when the service started it), then let
        asyncio's child watcher report each exited child (one owner reaps each)."""
        await self.profiler.close()
        await process_tree.settle_owned()
