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

from ..formatting import format_bytes, format_change, format_duration, format_share
from ..index.columns import median
from ..results import Report
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
from .interval import (
    NO_DIFFERENCE_BAND,
    RatioInterval,
    direction,
    point_interval,
    ratio_interval,
    widened,
)
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


def decide(
    interval: RatioInterval,
    eager_us: float,
    compiled_us: float,
    copies: list[CopyRow],
    compile_s: float,
) -> CompareVerdict:
    """``keep-eager`` / ``compile-wins`` / ``no-difference`` with its headline: compiled is
    slower or faster only when all of its widened interval (compiled / eager over the paired
    rounds, :mod:`.interval`) clears the ±5 % band."""
    ratio, low, high = widened(interval)
    times = f"{format_duration(eager_us)} → {format_duration(compiled_us)}"
    copy = _copy_phrase(copies)
    adds = f", adds {copy}" if copy else ""
    compile_cost = f"the {format_duration(compile_s * 1e6)} compile" if compile_s else "compiling"
    side = direction(low, high) if 0 < ratio < math.inf else (1 if ratio > 1 else -1)
    if side == 0:
        vid = "no-difference"
        spread = f"{low:.2f}–{high:.2f}×, " if high > low else ""
        headline = (
            f"torch.compile: no difference per call ({times}; {spread}within "
            f"±{format_share(NO_DIFFERENCE_BAND)}){adds}; keep eager — {compile_cost} buys nothing"
        )
    elif side > 0:
        vid = "keep-eager"
        headline = (
            f"torch.compile: {format_change(ratio)} slower per call ({times}){adds}; keep eager"
        )
    else:
        vid = "compile-wins"
        headline = (
            f"torch.compile: {format_change(ratio)} faster per call ({times}){adds}; compile wins "
            f"(after {compile_cost})"
        )
    return CompareVerdict(
        vid, headline, ratio, NO_DIFFERENCE_BAND, interval.noise, low, high, interval.rounds
    )


def _interval(meta: CompileMeta, eager_us: float, compiled_us: float) -> RatioInterval:
    """Compiled / eager over the timing's paired rounds; the medians' ratio without them."""
    if any(a > 0 and b > 0 for a, b in zip(meta.eager_us, meta.compiled_us)):
        return ratio_interval(meta.eager_us, meta.compiled_us)
    return point_interval(compiled_us / eager_us if eager_us > 0 else math.inf)


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
    verdict = decide(
        _interval(meta, eager.median_us or 0.0, compiled.median_us or 0.0),
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
    )
