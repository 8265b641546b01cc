"""Try a fix: rewrite a scratch copy, time it against the original in one ``diff`` job, check
what the program depends on, and say whether the rewrite may be applied.

The rewrite never touches the user's file: it travels as the ``diff`` job's earlier text
(``DiffRequest.before_source``, loaded under a private module name from a folder of the job),
with ``check_outputs`` set, so the worker first checks both sides' calls
(``worker/trial_check.py``: outputs, autograd, state; the rewrite's ``conditions``, its
``fallback`` and whether to compare with dropout off travel with it). The verdict is
``analysis/multi/diff.py``'s, with the original as *before* and the rewrite as *after*. Every
face calls ``try_fix``: the CLI's ``torchscope fix --try`` (it writes ``FixTrial.offered``
rewrites with ``apply_rewrite``), the LSP's ``torchscope.tryFix`` (Apply is the editor's
``workspace/applyEdit``) and the MCP tool ``try_fix`` (it writes nothing).
"""

from __future__ import annotations

import dataclasses
import os
import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Optional

from torchscope.analysis import ABRounds, compare_rounds
from torchscope.analysis import decide_diff as decide
from torchscope.host.diff_run import DiffJobKind
from torchscope.host.profile_run import HostJob, ProfileFailure
from torchscope.host.trace_analysis import Analyse, analyse_here
from torchscope.protocol import DiffRequest, DiffResult, JobOptions, JobRequest, Progress
from torchscope.source.fixes import Rewrite, fix_by_id
from torchscope.source.fixes.trial import (
    FixTrial,
    checked_trial,
    measured_trial,
    raised_trial,
    unified_patch,
)

if TYPE_CHECKING:
    from torchscope.host.profile_run import Profiler
    from torchscope.host.trace_store import TraceStore
    from torchscope.source.targets import Target


class FixNotApplicable(Exception):
    """The fix does not apply to this function on this device (the message says why)."""


@dataclass(frozen=True)
class FixJobKind(HostJob[DiffResult, DiffResult]):
    """The ``diff`` job with the rewrite as its earlier side and the output check on."""

    rewrite: Rewrite
    label: str
    kind = DiffRequest.TYPE
    reply_type = DiffResult
    fresh_worker_after = True  # as the diff job's (the heap settings of its timing)

    def request(self, fields: dict[str, Any], target: Target, store: TraceStore) -> JobRequest:
        rewrite = self.rewrite
        request = DiffJobKind(rewrite.source, self.label).request(fields, target, store)
        assert isinstance(request, DiffRequest)
        return dataclasses.replace(
            request,
            check_outputs=True,
            check_dropout_off=rewrite.dropout_off,
            trial_conditions=[dict(c) for c in rewrite.conditions],
            fallback_source=rewrite.fallback.source if rewrite.fallback else "",
        )

    def outcome(
        self,
        target: Target,
        call: Optional[str],
        reply: DiffResult,
        output: list[str],
        analyse: Analyse = analyse_here,
    ) -> DiffResult:
        return reply  # only the rounds and the output check count: no trace is read


def device_of(options: JobOptions, cuda_available: bool) -> str:
    """``cuda`` where the job would run on the GPU, else ``cpu``."""
    if options.device == "cpu":
        return "cpu"
    return "cuda" if cuda_available else "cpu"


def plan_rewrite(source: str, target: Target, fix_id: str, device: str) -> Rewrite:
    """The rewritten file; ``FixNotApplicable`` when the fix is unknown or does not apply."""
    fix = fix_by_id(fix_id)
    if fix is None:
        raise FixNotApplicable(f"no fix {fix_id!r}")
    if device not in fix.devices:
        raise FixNotApplicable(
            f"fix {fix_id} gains only on {' or '.join(fix.devices)}; the code runs on {device}"
        )
    rewrite = fix.rewrite(source, target.qualname, device)
    if rewrite is None:
        raise FixNotApplicable(f"fix {fix_id} does not apply to {target.qualname}")
    return rewrite


async def try_fix(
    profiler: Profiler,
    target: Target,
    call: Optional[str],
    options: JobOptions,
    fix_id: str,
    on_progress: Optional[Callable[[Progress], None]] = None,
) -> tuple[FixTrial, Rewrite]:
    """Rewrite, measure and check one fix on ``target``; raises ``FixNotApplicable``, or
    ``ProfileFailure`` when the original itself cannot run."""
    hello = await profiler.hello()
    source = Path(target.file).read_text(encoding="utf-8")
    rewrite = plan_rewrite(source, target, fix_id, device_of(options, hello.cuda_available))
    return await measure_rewrite(profiler, target, call, options, rewrite, on_progress)


MAX_TRIAL_JOBS = 3
"""Timing jobs a fix's trial takes at most. In one full-suite run the SDPA trial of the tests'
attention read about 1.1× with an interval of 0.92–1.30× ("not faster") in its one job, where
earlier runs read 1.34–1.36× and ``torch.utils.benchmark`` 1.37–1.44×: its rounds suggested
the speed-up without confirming it, and more rounds are what tells."""


async def measure_rewrite(
    profiler: Profiler,
    target: Target,
    call: Optional[str],
    options: JobOptions,
    rewrite: Rewrite,
    on_progress: Optional[Callable[[Progress], None]] = None,
) -> tuple[FixTrial, Rewrite]:
    """Time ``rewrite`` against the file on disk and check what the program depends on: one
    job, and up to :data:`MAX_TRIAL_JOBS` while the A/B engine's decision over the pooled
    rounds is ``inconclusive`` — a careful engineer measures again before calling a fix
    "not faster", and says so (``measuring again (2/3): …``). Returns the trial and the
    rewrite it measured (``Rewrite.fallback`` when the worker found a condition false)."""
    rounds: Optional[ABRounds] = None
    fallback = ""
    for job in range(1, MAX_TRIAL_JOBS + 1):
        if job > 1 and on_progress is not None:
            on_progress(
                Progress(
                    0,
                    "measure-again",
                    f"measuring again ({job}/{MAX_TRIAL_JOBS}): "
                    "the interval reaches out of the no-difference band without clearing it",
                )
            )
        kind = FixJobKind(rewrite, f"fix {rewrite.fix}")
        try:
            reply = await profiler.run_job(kind, target, call, options, on_progress)
        except ProfileFailure as failure:
            if failure.kind != "rewrite-raised":
                raise
            return raised_trial(
                rewrite.fix, failure.message, _patch(target, rewrite), rewrite.assumes
            ), rewrite
        if reply.outputs.get("fallback") and rewrite.fallback is not None:
            rewrite = dataclasses.replace(rewrite.fallback, conditions=())
            fallback = reply.outputs["fallback"]  # the worker's why, for every later job
        reply.outputs.setdefault("fallback", fallback)
        if reply.outputs.get("refusal"):  # refused by the check: the worker timed nothing
            return checked_trial(rewrite.fix, reply.outputs, _patch(target, rewrite),
                                 rewrite.assumes), rewrite  # fmt: skip
        this = ABRounds.of(reply.after.measured, reply.before.measured)  # original, rewrite
        rounds = this if rounds is None else rounds.pooled(this)
        comparison = compare_rounds(rounds)
        if comparison.decision != "inconclusive":
            break
    assert rounds is not None
    verdict = decide(
        comparison, "the original", statistics.median(rounds.a_us), statistics.median(rounds.b_us)
    )
    patch = _patch(target, rewrite)
    trial = measured_trial(rewrite.fix, verdict, reply.outputs, patch, rewrite.assumes)
    return dataclasses.replace(trial, comparison=comparison), rewrite


def _patch(target: Target, rewrite: Rewrite) -> str:
    return unified_patch(_patch_path(target.file), rewrite.original, rewrite.source)


def _patch_path(file: str) -> str:
    """The file as the patch names it: relative to the working folder when inside it (so
    ``git apply`` takes it there), else its name."""
    relative = os.path.relpath(Path(file).resolve(), Path.cwd())
    return Path(file).name if relative.startswith("..") else relative


def apply_rewrite(target: Target, rewrite: Rewrite, trial: FixTrial) -> bool:
    """Write the rewrite to the user's file when the trial offered it and the file is still
    what was measured; True when written."""
    path = Path(target.file)
    if not trial.offered or path.read_text(encoding="utf-8") != rewrite.original:
        return False
    path.write_text(rewrite.source, encoding="utf-8")
    return True
