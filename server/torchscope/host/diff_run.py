"""Before and after for one function: one worker job, two traces, one verdict.

The earlier side is a file's text — from ``git show REV:path`` (``torchscope diff``, the CI
check, **Compare with last commit**) or the source the editor kept from the previous profile
(**Re-profile**) — never a number stored from another run. Run it with
``await profiler.run_job(DiffJobKind(before_source, label), target, call, options)``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from torchscope.analysis import Diff, DiffSide, diff_runs
from torchscope.host.profile_run import HostJob, ProfileOutcome, header
from torchscope.host.trace_analysis import Analyse, analyse_here
from torchscope.host.trace_store import TraceStore
from torchscope.protocol import DiffRequest, DiffResult, JobRequest, ProfileResult, json_as
from torchscope.source.targets import Target


def _header(profile: ProfileOutcome) -> dict[str, Any]:
    return header(profile.target, profile.call)


@dataclass
class DiffOutcome:
    """The current version's profile plus the comparison; ``to_builtins`` of it is
    ``diff --json``'s object: the target, the call and ``diff``."""

    profile: ProfileOutcome = field(metadata=json_as(view=_header, flatten=True))
    diff: Diff = field(metadata=json_as())
    output: list[str] = field(default_factory=list, metadata=json_as(skip=True))


def _side(result: ProfileResult, label: str, source: str, analyse: Analyse) -> DiffSide:
    done = analyse(result.trace_path, result.measured, True)
    assert done.inventory is not None
    call_us = list(result.measured.call_us)
    return DiffSide(
        label, call_us, done.report, done.inventory, source, result.trace_path, result.measured
    )


@dataclass(frozen=True)
class DiffJobKind(HostJob[DiffResult, DiffOutcome]):
    """The ``diff`` job kind against ``before_source``, called ``before_label`` in the verdict
    ("HEAD", "before the edit"). One instance per comparison: it carries the earlier text."""

    before_source: str
    before_label: str = "HEAD"
    kind = DiffRequest.TYPE
    reply_type = DiffResult
    # The interleaved timing leaves glibc's heap settings changed (``time_interleaved``): the
    # next job gets a fresh worker, as after a compile comparison.
    fresh_worker_after = True
    # No module-level instance (each comparison makes its own), so ``host.job_kinds`` does not
    # list it and ``profile`` gets no flag for it: ``torchscope diff`` / ``check`` are its CLI.

    def request(self, fields: dict[str, Any], target: Target, store: TraceStore) -> JobRequest:
        before_path = store.new_path(target.file, f"{target.qualname}.before")
        return DiffRequest(
            **fields,
            before_source=self.before_source,
            before_label=self.before_label,
            before_trace_path=str(before_path),
        )

    def outcome(
        self,
        target: Target,
        call: Optional[str],
        reply: DiffResult,
        output: list[str],
        analyse: Analyse = analyse_here,
    ) -> DiffOutcome:
        after, before = reply.after, reply.before
        after_source = Path(target.file).read_text(encoding="utf-8")
        after_side = _side(after, "now", after_source, analyse)
        before_side = _side(before, reply.before_label, self.before_source, analyse)
        profile = ProfileOutcome(target, call, after, after_side.report, output)
        return DiffOutcome(profile, diff_runs(before_side, after_side), output)
