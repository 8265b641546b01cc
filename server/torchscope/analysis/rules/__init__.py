"""All finding rules, one module each (DESIGN.md §3 findings catalogue).

Order here is only the tie-break order; findings are sorted by cost.
"""

from __future__ import annotations

from ..context import Context
from ..report import Finding
from ..stages import Metrics
from . import (
    allocation_churn,
    cold_start,
    comm_heavy,
    compile_copy,
    compile_slower,
    compile_tax,
    dataloader,
    dispatch_gap,
    fp32_matmul,
    gpu_idle,
    graph_break,
    heavy_kernel,
    hidden_copy,
    host_to_device_in_loop,
    hot_op,
    kernel_variance,
    launch_delay,
    lazy_init,
    leak,
    low_efficiency_gemm,
    low_utilization,
    many_calls,
    memory_bound_chain,
    pageable_copy,
    peak_near_limit,
    profiler_buffer,
    profiler_flush,
    recompile,
    small_kernels,
    sync,
    thread_contention,
    unaligned_fp16,
    zero_grad,
)
from .base import Rule
from .compare_base import CompareContext, CompareRule

ALL_RULES: list[Rule] = [
    pageable_copy.RULE,
    sync.RULE,
    dataloader.RULE,
    gpu_idle.RULE,
    comm_heavy.RULE,
    hidden_copy.RULE,
    small_kernels.RULE,
    launch_delay.RULE,
    compile_tax.RULE,
    dispatch_gap.RULE,
    many_calls.RULE,
    hot_op.RULE,
    kernel_variance.RULE,
    fp32_matmul.RULE,
    unaligned_fp16.RULE,
    zero_grad.RULE,
    cold_start.RULE,
    low_utilization.RULE,
    heavy_kernel.RULE,
    lazy_init.RULE,
    profiler_flush.RULE,
    profiler_buffer.RULE,
    low_efficiency_gemm.RULE,
    memory_bound_chain.RULE,
    thread_contention.RULE,
    allocation_churn.RULE,
    leak.RULE,
    peak_near_limit.RULE,
    host_to_device_in_loop.RULE,
]

COMPARE_RULES: list[CompareRule] = [
    compile_slower.RULE,
    compile_copy.RULE,
    recompile.RULE,
    graph_break.RULE,
]
"""Rules over an eager vs ``torch.compile`` comparison, in the order their findings are listed."""

__all__ = [
    "ALL_RULES",
    "COMPARE_RULES",
    "CompareContext",
    "CompareRule",
    "Rule",
    "rule_by_id",
    "run_compare_rules",
    "run_rules",
]


def rule_by_id(rule_id: str) -> Rule | CompareRule:
    """The registered rule with this id."""
    candidates: list[Rule | CompareRule] = [*ALL_RULES, *COMPARE_RULES]
    for r in candidates:
        if r.id == rule_id:
            return r
    raise KeyError(rule_id)


_SEVERITY_RANK = {"error": 0, "warning": 1, "information": 2, "hint": 3}


def run_rules(
    ctx: Context, metrics: Metrics, rules: list[Rule] | None = None
) -> tuple[list[Finding], dict[str, str]]:
    """Findings sorted by cost (largest first, then severity), and ``{rule id: why skipped}``.

    A rule that raises is a bug in that rule, not a reason to lose the whole report: its id
    is listed in the skipped map with ``failed: …`` and the other rules still run.
    """
    findings: list[Finding] = []
    skipped: dict[str, str] = {}
    for rule in ALL_RULES if rules is None else rules:
        try:
            reason = rule.skip(ctx, metrics)
            if reason is not None:
                skipped[rule.id] = reason
                continue
            findings.extend(rule.match(ctx, metrics))
        except Exception as exc:
            skipped[rule.id] = f"failed: {type(exc).__name__}: {exc}"
    findings.sort(key=lambda f: (-f.cost_us, _SEVERITY_RANK.get(f.severity, 9), f.rule))
    return findings, skipped


def run_compare_rules(cctx: CompareContext) -> tuple[list[Finding], dict[str, str]]:
    """The comparison's findings in rule order, and ``{rule id: why skipped}``."""
    findings: list[Finding] = []
    skipped: dict[str, str] = {}
    for rule in COMPARE_RULES:
        reason = rule.skip(cctx)
        if reason is not None:
            skipped[rule.id] = reason
            continue
        findings.extend(rule.match(cctx))
    return findings, skipped
