"""Eager vs ``torch.compile`` for one function: one worker job, two traces, one comparison.

The eager side is a complete profile (the same passes, line markers and report as
**Profile this function**), so a failed compile still leaves the user a profile; the compiled
side adds its own trace, and ``analysis.multi.compare`` puts the two side by side.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass, field, replace
from typing import Any, Optional

from torchscope.analysis import Report, TraceError
from torchscope.analysis.engine import analyze
from torchscope.analysis.multi.compare import compare_runs
from torchscope.analysis.multi.comparison import Comparison, CompileMeta
from torchscope.analysis.multi.compiled_lines import CompiledLines, compiled_lines
from torchscope.analysis.multi.inventory import Inventory, inventory
from torchscope.host.profile_run import CliReport, HostJob, ProfileOutcome, measurements_of
from torchscope.host.trace_store import TraceStore
from torchscope.ingest import Trace, load_trace
from torchscope.protocol import (
    CompareRequest,
    CompareResult,
    GraphBreakSite,
    JobRequest,
    KernelSource,
    ProfileResult,
)
from torchscope.report.compare import render_comparison
from torchscope.targets import Target


@dataclass
class CompareOutcome:
    """The eager profile plus the comparison; ``to_json`` is ``profile --json`` + ``compare``."""

    profile: ProfileOutcome
    compare: Comparison
    compiled_report: Optional[Report] = None
    compile_traceback: str = ""
    output: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        data = self.profile.to_json()
        data["compare"] = self.compare.to_dict()
        return data


@dataclass
class EagerProfile(ProfileOutcome):
    """The eager profile of a comparison: each entry of its JSON ``lines`` gains
    ``compiled_us`` and ``fused_with`` (None and [] where the compiled side has no per-line
    times: no provenance, or no kernel on that line)."""

    compiled_lines: Optional[CompiledLines] = None

    def to_json(self) -> dict[str, Any]:
        data = super().to_json()
        lines = self.compiled_lines.lines if self.compiled_lines else []
        compiled = {c.line: c for c in lines}
        for entry in data.get("lines", []):
            line = compiled.get(entry.get("line"))
            entry["compiled_us"] = line.compiled_us if line else None
            entry["fused_with"] = list(line.fused_with) if line else []
        return data


def _result(fields: dict[str, Any]) -> ProfileResult:
    names = {f.name for f in dataclasses.fields(ProfileResult)}
    return ProfileResult(**{k: v for k, v in fields.items() if k in names})


def _analyze(result: ProfileResult) -> tuple[Report, Inventory, Trace]:
    trace = load_trace(result.trace_path)
    return analyze(trace, measurements_of(result)), inventory(trace), trace


def _with_lines(
    compare: Comparison, reply: CompareResult, file: str, eager: Report, trace: Optional[Trace]
) -> Comparison:
    """The comparison with its per-line times (issue 42), when the compiled side has a trace."""
    if trace is None or compare.compiled is None:
        return compare
    sources = [KernelSource(**k) for k in reply.kernel_sources]
    breaks = [GraphBreakSite(**b) for b in reply.graph_break_sites]
    here = os.path.realpath(file)
    breaks = [b for b in breaks if os.path.realpath(b.file) == here]
    # profiled against profiled: the compiled kernels' times carry the profiler's cost too
    eager_us = {s.line: s.device_us or s.profiled_cpu_us or s.cpu_us for s in eager.lines}
    lines = compiled_lines(trace, sources, breaks, eager_us, reply.provenance_note)
    return replace(compare, lines=lines)


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
        self, target: Target, call: Optional[str], reply: CompareResult, output: list[str]
    ) -> CompareOutcome:
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
            # the timing's interleaved rounds: call_us of both sides pair by index
            eager_us=list(eager.call_us),
            compiled_us=list(compiled.call_us) if compiled else [],
        )
        eager_report, eager_inv, _ = _analyze(eager)  # a TraceError fails the job
        compiled_report: Optional[Report] = None
        compiled_inv: Optional[Inventory] = None
        compiled_trace: Optional[Trace] = None
        if compiled is not None:
            try:
                compiled_report, compiled_inv, compiled_trace = _analyze(compiled)
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
        compare = _with_lines(compare, reply, target.file, eager_report, compiled_trace)
        profile = EagerProfile(target, call, eager, eager_report, output, compare.lines)
        return CompareOutcome(profile, compare, compiled_report, reply.compile_traceback, output)

    def cli_report(self, outcome: CompareOutcome, verbose: bool) -> CliReport:
        """The eager profile, then the comparison; a compile failure is told on stderr."""
        stderr = []
        error = outcome.compare.error
        if error:
            stderr.append(f"torchscope: {error.message}")
            if outcome.compile_traceback and verbose:
                stderr.append(outcome.compile_traceback)
            stderr.append("torchscope: the eager profile is still reported")
        text = render_comparison(outcome.compare) + "\n"
        return CliReport(outcome.profile, "compare", outcome.compare.to_dict, text, stderr)


COMPARE = CompareJobKind()
