"""Before and after for one function: one worker job, two traces, one verdict.

The earlier side is a file's text — from ``git show REV:path`` (``torchscope diff``, the CI
check, **Compare with last commit**) or the source the editor kept from the previous run
(**Re-profile**) — never a number stored from another run.
"""

from __future__ import annotations

import asyncio
import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional

from torchscope.analysis import TraceError
from torchscope.analysis.compare import inventory
from torchscope.analysis.diff import DiffSide, diff_runs
from torchscope.analysis.engine import analyze
from torchscope.analysis.normalise import load_trace
from torchscope.host.profile_run import (
    ProfileFailure,
    ProfileOptions,
    ProfileOutcome,
    Profiler,
    choose_call,
    measurements_of,
)
from torchscope.host.worker_process import JobCancelled, WorkerError
from torchscope.protocol import DiffRequest, DiffResult, JobError, Output, ProfileResult, Progress
from torchscope.targets import Target

DIFF_TIMING_BUDGET_S = 2.0
"""Seconds of interleaved timing per side (both sides: twice this)."""


@dataclass
class DiffOutcome:
    """The current version's profile plus the comparison; ``to_json`` is ``diff --json``."""

    profile: ProfileOutcome
    diff: dict[str, Any]
    output: list[str] = field(default_factory=list)

    @property
    def verdict(self) -> str:
        return str(self.diff["verdict"]["id"])

    def to_json(self) -> dict[str, Any]:
        return {
            "target": {
                "file": self.profile.target.file,
                "qualname": self.profile.target.qualname,
                "line": self.profile.target.def_line,
            },
            "call": self.profile.call,
            "diff": self.diff,
        }


def _result(fields: dict[str, Any]) -> ProfileResult:
    names = {f.name for f in dataclasses.fields(ProfileResult)}
    return ProfileResult(**{k: v for k, v in fields.items() if k in names})


def _side(result: ProfileResult, label: str, source: str) -> DiffSide:
    trace = load_trace(result.trace_path)
    report = analyze(trace, measurements_of(result))
    return DiffSide(
        label, list(result.call_us), report, inventory(trace), source, result.trace_path
    )


async def diff_function(
    profiler: Profiler,
    target: Target,
    call: Optional[str],
    options: ProfileOptions,
    before_source: str,
    before_label: str,
    timing_budget_s: float = DIFF_TIMING_BUDGET_S,
    on_progress: Optional[Callable[[Progress], None]] = None,
    on_output: Optional[Callable[[Output], None]] = None,
) -> DiffOutcome:
    """Time and profile ``target`` as it is on disk against ``before_source``, interleaved."""
    output: list[str] = []

    def collect_output(message: Output) -> None:
        output.append(message.text)
        if on_output:
            on_output(message)

    async with profiler.exclusive() as (worker, hello, job_id):
        chosen = choose_call(target, call, hello.cuda_available)
        store = profiler.trace_store
        request = DiffRequest(
            job_id=job_id,
            file=str(Path(target.file).resolve()),
            qualname=target.qualname,
            call=chosen,
            trace_path=str(store.new_path(target.file, target.qualname)),
            workspace_root=options.workspace_root,
            steps=options.steps,
            warmup=options.warmup,
            device=options.device,
            timing_budget_s=timing_budget_s,
            before_source=before_source,
            before_label=before_label,
            before_trace_path=str(store.new_path(target.file, f"{target.qualname}.before")),
        )
        try:
            # The private ``_run`` until the job seam's one ``run_job`` lands (issue 11).
            reply = await worker._run(request, on_progress, collect_output, options.timeout_s)
        except JobCancelled as exc:
            raise ProfileFailure("timeout", str(exc), target.def_line) from exc
        except WorkerError as exc:
            raise ProfileFailure("worker", str(exc), target.def_line) from exc
    if isinstance(reply, JobError):
        raise ProfileFailure(
            reply.kind, reply.message, reply.line or target.def_line, reply.traceback
        )
    assert isinstance(reply, DiffResult)
    return await _analyzed(reply, target, chosen, before_source, output)


async def _analyzed(
    reply: DiffResult, target: Target, call: Optional[str], before_source: str, output: list[str]
) -> DiffOutcome:
    """Both traces analysed (in a thread), then compared."""
    after, before = _result(reply.after), _result(reply.before)
    loop = asyncio.get_running_loop()
    after_source = Path(target.file).read_text(encoding="utf-8")
    try:
        after_side = await loop.run_in_executor(None, _side, after, "now", after_source)
        before_side = await loop.run_in_executor(
            None, _side, before, reply.before_label, before_source
        )
    except TraceError as exc:
        raise ProfileFailure("analysis", str(exc), target.def_line) from exc
    diff = diff_runs(before_side, after_side)
    profile = ProfileOutcome(target, call, after, after_side.report, output)
    return DiffOutcome(profile, diff, output)
