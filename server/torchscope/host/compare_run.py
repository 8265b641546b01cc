"""Eager vs ``torch.compile`` for one function: one worker job, two traces, one comparison.

The eager side is a complete profile (the same passes, line markers and report as
**Profile this function**), so a failed compile still leaves the user a profile; the compiled
side adds its own trace, and ``analysis.compare_runs`` puts the two side by side.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from typing import Any, Optional

from torchscope.analysis import (
    ABRounds,
    Comparison,
    CompiledLines,
    CompiledOnLine,
    CompileMeta,
    Inventory,
    KernelLines,
    Report,
    TraceError,
    compare_runs,
)
from torchscope.host.profile_run import HostJob, ProfileOutcome
from torchscope.host.trace_analysis import Analyse, Analysed, analyse_here
from torchscope.host.trace_store import TraceStore
from torchscope.protocol import (
    CompareRequest,
    CompareResult,
    JobRequest,
    ProfileResult,
    json_as,
)
from torchscope.source.targets import Target


@dataclass
class CompareOutcome:
    """The eager profile plus the comparison; ``to_builtins`` of it is ``profile --json``'s
    object plus ``compare``."""

    profile: ProfileOutcome = field(metadata=json_as(flatten=True))
    compare: Comparison = field(metadata=json_as())
    compiled_report: Optional[Report] = field(default=None, metadata=json_as(skip=True))
    compile_traceback: str = field(default="", metadata=json_as(skip=True))
    output: list[str] = field(default_factory=list, metadata=json_as(skip=True))


def with_compiled_lines(report: Report, compiled: Optional[CompiledLines]) -> Report:
    """The eager report of a comparison: each line with its compiled time and the lines
    fused with it (None and [] where the compiled side has no per-line times: no
    provenance, or no kernel on that line)."""
    by_line = {c.line: c for c in (compiled.lines if compiled else [])}

    def on(line: int) -> CompiledOnLine:
        found = by_line.get(line)
        if found is None:
            return CompiledOnLine(None)
        return CompiledOnLine(found.compiled_us, list(found.fused_with))

    lines = [replace(s, compiled=on(s.line)) for s in report.lines]
    return replace(report, lines=lines)


def _analyze(
    result: ProfileResult, analyse: Analyse, kernels: Optional[KernelLines] = None
) -> tuple[Analysed, Inventory]:
    done = analyse(result.trace_path, result.measured, True, kernels)
    assert done.inventory is not None
    return done, done.inventory


def _kernel_lines(reply: CompareResult, file: str, eager: Report) -> KernelLines:
    """What the compiled side's per-line times (issue 42) are computed from in the analysis
    child, beside its trace: the worker's provenance and the graph breaks in ``file``."""
    here = os.path.realpath(file)
    breaks = reply.graph_break_sites
    # profiled against profiled: the compiled kernels' times carry the profiler's cost too
    return KernelLines(
        list(reply.kernel_sources),
        [b for b in breaks if os.path.realpath(b.file) == here],
        {s.line: s.device_us or s.profiled_cpu_us or s.cpu_us for s in eager.lines},
        reply.provenance_note,
    )


class CompareJobKind(HostJob[CompareResult, CompareOutcome]):
    """The ``compare`` job kind: ``await profiler.run_job(COMPARE, target, call, options)``
    (the mode is ``options.compile_mode``)."""

    kind = CompareRequest.TYPE
    reply_type = CompareResult
    # Compiling leaves the process changed (Inductor imported, Dynamo's caches, the allocator
    # settings of worker.compile_tools.steady_allocator): the next job gets a fresh worker, so
    # a later plain profile measures what it would have measured.
    fresh_worker_after = True

    def request(self, fields: dict[str, Any], target: Target, store: TraceStore) -> JobRequest:
        compiled_path = store.new_path(target.file, f"{target.qualname}.compiled")
        return CompareRequest(**fields, compiled_trace_path=str(compiled_path))

    def outcome(
        self,
        target: Target,
        call: Optional[str],
        reply: CompareResult,
        output: list[str],
        analyse: Analyse = analyse_here,
    ) -> CompareOutcome:
        eager, compiled = reply.eager, reply.compiled
        meta = CompileMeta(
            mode=reply.mode,
            compile_s=reply.compile_s,
            error=reply.compile_error,
            error_kind=reply.compile_error_kind,
            recompiles=reply.recompiles,
            graph_breaks=list(reply.graph_breaks),
            graph_code=dict(reply.graph_code),
            # the timing's interleaved rounds: call_us of both sides pair by index
            eager_us=list(eager.measured.call_us),
            compiled_us=list(compiled.measured.call_us) if compiled else [],
            rounds=ABRounds.of(eager.measured, compiled.measured) if compiled else None,
        )
        eager_done, eager_inv = _analyze(eager, analyse)  # a TraceError fails the job
        eager_report = eager_done.report
        compiled_report: Optional[Report] = None
        compiled_inv: Optional[Inventory] = None
        lines: Optional[CompiledLines] = None
        if compiled is not None:
            try:
                kernels = _kernel_lines(reply, target.file, eager_report)
                done, compiled_inv = _analyze(compiled, analyse, kernels)
                compiled_report, lines = done.report, done.lines
            except TraceError as exc:
                error = f"the compiled trace cannot be read: {exc}"
                meta = replace(meta, error=error, error_kind="analysis")
        compare = compare_runs(
            eager_report,
            eager_inv,
            compiled_report,
            compiled_inv,
            meta,
            file=target.file,
            line=target.def_line,
        )
        compare = replace(
            compare,
            eager=replace(compare.eager, trace_path=eager.trace_path),
            compiled=(
                replace(compare.compiled, trace_path=compiled.trace_path)
                if compare.compiled is not None and compiled is not None
                else compare.compiled
            ),
        )
        if lines is not None and compare.compiled is not None:
            compare = compare.with_lines(lines)
        shown = with_compiled_lines(eager_report, compare.lines)
        profile = ProfileOutcome(target, call, eager, shown, output)
        return CompareOutcome(profile, compare, compiled_report, reply.compile_traceback, output)


COMPARE = CompareJobKind()
