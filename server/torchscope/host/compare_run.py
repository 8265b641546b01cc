"""Eager vs ``torch.compile`` for one function: one worker job, two traces, one comparison.

The eager side is a complete profile (the same passes, line markers and report as
**Profile this function**), so a failed compile still leaves the user a profile; the compiled
side adds its own trace, and ``analysis.compare`` puts the two side by side.
"""

from __future__ import annotations

import asyncio
import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional

from torchscope.analysis import Report, TraceError
from torchscope.analysis.compare import CompileMeta, Inventory, compare_runs, inventory
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
from torchscope.protocol import (
    CompareRequest,
    JobError,
    Output,
    ProfileResult,
    Progress,
)
from torchscope.targets import Target


@dataclass
class CompareOutcome:
    """The eager profile plus the comparison; ``to_json`` is ``profile --json`` + ``compare``."""

    profile: ProfileOutcome
    compare: dict[str, Any]
    compiled_report: Optional[Report] = None
    compile_traceback: str = ""
    output: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        data = self.profile.to_json()
        data["compare"] = self.compare
        return data


def _result(fields: dict[str, Any]) -> ProfileResult:
    names = {f.name for f in dataclasses.fields(ProfileResult)}
    return ProfileResult(**{k: v for k, v in fields.items() if k in names})


def _analyze(result: ProfileResult) -> tuple[Report, Inventory]:
    trace = load_trace(result.trace_path)
    return analyze(trace, measurements_of(result)), inventory(trace)


async def compare_compile(
    profiler: Profiler,
    target: Target,
    call: Optional[str],
    options: ProfileOptions,
    mode: str = "default",
    on_progress: Optional[Callable[[Progress], None]] = None,
    on_output: Optional[Callable[[Output], None]] = None,
) -> CompareOutcome:
    """Profile ``target`` eagerly and under ``torch.compile(mode=mode)`` in one job."""
    output: list[str] = []

    def collect_output(message: Output) -> None:
        output.append(message.text)
        if on_output:
            on_output(message)

    async with profiler.exclusive() as (worker, hello, job_id):
        chosen = choose_call(target, call, hello.cuda_available)
        store = profiler.trace_store
        request = CompareRequest(
            job_id=job_id,
            file=str(Path(target.file).resolve()),
            qualname=target.qualname,
            call=chosen,
            trace_path=str(store.new_path(target.file, target.qualname)),
            workspace_root=options.workspace_root,
            steps=options.steps,
            warmup=options.warmup,
            device=options.device,
            mode=mode,
            compiled_trace_path=str(store.new_path(target.file, f"{target.qualname}.compiled")),
        )
        worker.max_memory = options.max_memory
        try:
            reply = await worker.run_compare(
                request, on_progress, collect_output, options.timeout_s
            )
        except JobCancelled as exc:
            raise ProfileFailure("timeout", str(exc), target.def_line) from exc
        except WorkerError as exc:
            raise ProfileFailure("worker", str(exc), target.def_line) from exc
        finally:
            # Compiling leaves the process changed (Inductor imported, Dynamo's caches, the
            # allocator settings of worker.compile_compare.steady_allocator): the next job gets
            # a fresh worker, so a later plain profile measures what it would have measured.
            await worker.close()
    if isinstance(reply, JobError):
        raise ProfileFailure(
            reply.kind, reply.message, reply.line or target.def_line, reply.traceback
        )
    eager = _result(reply.eager)
    compiled = _result(reply.compiled) if reply.compiled else None
    meta = CompileMeta(
        mode=reply.mode,
        compile_s=reply.compile_s,
        error=reply.compile_error,
        error_kind=reply.compile_error_kind,
        recompiles=reply.recompiles,
        graph_breaks=list(reply.graph_breaks),
        graph_code=dict(reply.graph_code),
        paired_ratios=list(reply.paired_ratios),
    )
    loop = asyncio.get_running_loop()
    try:
        eager_report, eager_inv = await loop.run_in_executor(None, _analyze, eager)
    except TraceError as exc:
        raise ProfileFailure("analysis", str(exc), target.def_line) from exc
    compiled_report: Optional[Report] = None
    compiled_inv: Optional[Inventory] = None
    if compiled is not None:
        try:
            compiled_report, compiled_inv = await loop.run_in_executor(None, _analyze, compiled)
        except TraceError as exc:
            meta = dataclasses.replace(
                meta, error=f"the compiled trace cannot be read: {exc}", error_kind="analysis"
            )
    compare = compare_runs(
        eager_report,
        eager_inv,
        compiled_report,
        compiled_inv,
        meta,
        file=target.file,
        line=target.def_line,
    )
    compare["eager"]["trace_path"] = eager.trace_path
    if compare.get("compiled") is not None and compiled is not None:
        compare["compiled"]["trace_path"] = compiled.trace_path
    profile = ProfileOutcome(target, chosen, eager, eager_report, output)
    return CompareOutcome(profile, compare, compiled_report, reply.compile_traceback, output)
