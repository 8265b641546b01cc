"""Eager vs ``torch.compile``, side by side: per-call numbers, changed ops, copies, a verdict.

The guide's lesson: measure ``torch.compile``, don't assume it helps. At 64×64 its ``fn``
compiled to one ``aten::addmm`` (instead of ``aten::mm`` + ``aten::add``) plus a copy of the
bias into the output, and each call cost *more* than eager (Dynamo's guard check and the AOT
wrapper cost more than the fusion saved). Inputs are the two analysed reports, an
:class:`Inventory` of each trace (which ops ran, inside which op, and the copies), and what
the worker measured about the compile itself (:class:`CompileMeta`). Pure Python, like the rest
of ``analysis``.
"""

from __future__ import annotations

import math
from typing import Optional

from ..formatting import format_bytes, format_duration, format_share
from ..index.columns import median
from ..results import ABComparison, Report
from .ab import ABRounds, as_comparison, compare_rounds, point_comparison
from .comparison import (
    CompareError,
    CompareSide,
    CompareVerdict,
    Comparison,
    CompiledInfo,
    CompileMeta,
    CopyRow,
    Graph,
    OpChange,
    OpChanges,
    SideVerdict,
)
from .compile_rules import CompareContext, run_compare_rules
from .interval import RatioInterval
from .inventory import Inventory

TRIVIAL_OPS = frozenset(
    {
        "aten::resolve_conj",
        "aten::resolve_neg",
        "aten::view",
        "aten::_reshape_alias",
        "aten::reshape",
        "aten::as_strided",
        "aten::t",
        "aten::transpose",
        "aten::expand",
        "aten::unsqueeze",
        "aten::squeeze",
        "aten::detach",
        "aten::alias",
        "aten::lift_fresh",
        "aten::_unsafe_view",
        "aten::empty",
        "aten::empty_strided",
        "aten::empty_like",
    }
)
"""Metadata-only ops (no bytes move): listed in ``ops`` but left out of the change summary."""


def _side(report: Report, inv: Inventory, compiled: Optional[CompiledInfo] = None) -> CompareSide:
    steps = report.steps
    timing = report.timing
    return CompareSide(
        median_us=timing.median_us if timing else None,
        min_us=timing.min_us if timing else None,
        max_us=timing.max_us if timing else None,
        cold_us=timing.cold_us if timing else None,
        calls_timed=timing.calls if timing else 0,
        cpu_us=median([s.cpu_op_us for s in steps]),
        profiled_us=median([s.wall_us for s in steps]),
        device_us=median([s.device_time_us for s in steps]),
        launches=median([float(s.launches) for s in steps]),
        copies=list(inv.copies),
        copy_count=sum(c.calls for c in inv.copies),
        copy_bytes=sum(c.bytes for c in inv.copies),
        op_count=sum(r.calls for r in inv.ops),
        ops=list(inv.ops),
        verdict=SideVerdict(report.verdict.id, report.verdict.headline),
        stable=report.verdict.stable,
        spread=timing.spread if timing else 0.0,
        busy_share=report.machine.busy_share if report.machine else None,
        unstable_reason=report.verdict.unstable_reason,
        top_level_ops=median([float(s.ops) for s in steps]),
        compiled=compiled,
    )


def op_changes(eager: Inventory, compiled: Inventory) -> OpChanges:
    """Which ops the compiled run dispatches more or less often than eager (per call)."""
    before, after = eager.counts(), compiled.counts()
    removed: list[OpChange] = []
    added: list[OpChange] = []
    for name in [*before, *(k for k in after if k not in before)]:
        b, a = before.get(name, 0.0), after.get(name, 0.0)
        if abs(a - b) < 1e-9:
            continue
        (removed if a < b else added).append(OpChange(name, b, a))
    shown_removed = [r.name for r in removed if r.name not in TRIVIAL_OPS]
    shown_added = [r.name for r in added if r.name not in TRIVIAL_OPS]
    summary = ""
    if shown_removed or shown_added:
        summary = (
            f"{' + '.join(shown_removed) or '(nothing)'} → {' + '.join(shown_added) or '(nothing)'}"
        )
    return OpChanges(removed, added, summary)


def added_copies(eager: Inventory, compiled: Inventory) -> list[CopyRow]:
    """Compiled copies with no eager counterpart (same kind, same enclosing op), or more bytes."""
    base: dict[tuple[str, Optional[str]], float] = {}
    for c in eager.copies:
        base[(c.kind, c.within)] = base.get((c.kind, c.within), 0.0) + c.bytes
    out = []
    for c in compiled.copies:
        if c.bytes > base.get((c.kind, c.within), 0.0) or (
            c.bytes == 0 and (c.kind, c.within) not in base
        ):
            out.append(c)
    return out


def _copy_phrase(copies: list[CopyRow]) -> str:
    """``a 16.0 KiB bias copy`` / ``2 copies (32.0 KiB)``; '' for none."""
    if not copies:
        return ""
    total = sum(c.bytes for c in copies)
    count = sum(c.calls for c in copies)
    size = f"{format_bytes(total)} " if total else ""
    if len(copies) == 1 and round(count) == 1:
        what = "bias copy" if copies[0].is_bias_copy else "copy"
        kind = f" ({copies[0].kind})" if copies[0].kind != "cpu" else ""
        return f"a {size}{what}{kind}"
    return f"{count:g} copies ({format_bytes(total)})"


VERDICT_OF = {
    "faster": "compile-wins",
    "slower": "keep-eager",
    "no-difference": "no-difference",
    "inconclusive": "inconclusive",
}
"""The A/B engine's decision (compiled against eager) → the comparison's verdict id."""


def decide(
    source: ABComparison | RatioInterval,
    eager_us: float,
    compiled_us: float,
    copies: list[CopyRow],
    compile_s: float,
) -> CompareVerdict:
    """``keep-eager`` / ``compile-wins`` / ``no-difference`` / ``inconclusive`` with its
    headline: the A/B engine's decision of compiled against eager (:mod:`.ab`), its phrase
    (one direction, one pair of parentheses), and the reason when unstable or undecided."""
    c = as_comparison(source)
    times = f"{format_duration(eager_us)} → {format_duration(compiled_us)}"
    copy = _copy_phrase(copies)
    adds = f", adds {copy}" if copy else ""
    compile_cost = f"the {format_duration(compile_s * 1e6)} compile" if compile_s else "compiling"
    vid = VERDICT_OF[c.decision]
    band = f"±{format_share(c.band)}"
    if vid == "no-difference":
        tail = f"no difference within {band}; keep eager — {compile_cost} buys nothing"
    elif vid == "keep-eager":
        tail = "keep eager"
    elif vid == "compile-wins":
        tail = f"compile wins (after {compile_cost})"
    else:
        tail = "keep eager unless a rerun shows a gain"
    headline = f"torch.compile: {c.phrase} per call; {times}{adds}; {tail}"
    if not c.stable or vid == "inconclusive":
        headline += f" — {c.reason}"
    low, high = c.interval
    return CompareVerdict(vid, headline, c.ratio, c.band, c.noise, low, high, c.rounds)


def _comparison(meta: CompileMeta, eager_us: float, compiled_us: float) -> ABComparison:
    """Compiled against eager over the timing's paired rounds; the medians' ratio without
    them."""
    rounds = meta.rounds or ABRounds(list(meta.eager_us), list(meta.compiled_us))
    if any(a > 0 and b > 0 for a, b in zip(rounds.a_us, rounds.b_us)):
        return compare_rounds(rounds)
    return point_comparison(compiled_us / eager_us if eager_us > 0 else math.inf)


def _compiled_info(meta: CompileMeta, inv: Inventory) -> CompiledInfo:
    hashes = inv.graphs or sorted(meta.graph_code)
    return CompiledInfo(
        compile_s=meta.compile_s,
        graphs=[Graph(h, meta.graph_code.get(h)) for h in hashes],
        recompiles=meta.recompiles,
        compile_ids=list(inv.compile_ids),
        graph_breaks=list(meta.graph_breaks),
    )


def compare_runs(
    eager_report: Report,
    eager_inv: Inventory,
    compiled_report: Optional[Report],
    compiled_inv: Optional[Inventory],
    meta: CompileMeta,
    file: Optional[str] = None,
    line: Optional[int] = None,
) -> Comparison:
    """Eager vs compiled: both sides, the changed ops, the verdict and the comparison rules'
    findings (see :data:`.compile_rules.COMPARE_RULES`); without a compiled run, the error."""
    eager = _side(eager_report, eager_inv)
    if compiled_report is None or compiled_inv is None:
        error = CompareError(
            meta.error_kind or "compile-failed",
            meta.error or "torch.compile did not produce a compiled run",
        )
        breaks = list(meta.graph_breaks) if meta.graph_breaks else None
        return Comparison(meta.mode, eager, error=error, graph_breaks=breaks)
    compiled = _side(compiled_report, compiled_inv, _compiled_info(meta, compiled_inv))
    copies = added_copies(eager_inv, compiled_inv)
    comparison = _comparison(meta, eager.median_us or 0.0, compiled.median_us or 0.0)
    verdict = decide(
        comparison,
        eager.median_us or 0.0,
        compiled.median_us or 0.0,
        copies,
        meta.compile_s or 0.0,
    )
    cctx = CompareContext(eager, compiled, compiled_report, copies, meta, verdict, file, line)
    findings, skipped = run_compare_rules(cctx)
    return Comparison(
        mode=meta.mode,
        eager=eager,
        compiled=compiled,
        changes=op_changes(eager_inv, compiled_inv),
        verdict=verdict,
        findings=findings,
        rules_skipped=skipped,
        comparison=comparison,
    )
