"""The rules over one trace, one module each (DESIGN.md §3 findings catalogue); the rules over
a comparison and over ranks are in ``multi/compile_rules/`` and ``multi/rank_rules/``. Only
``engine`` imports this package.

Order here is only the tie-break order; findings are sorted by cost.
"""

from __future__ import annotations

from ..index.context import Context
from ..measure.stages import Metrics
from ..results import Finding
from . import (
    allocation_churn,
    cold_start,
    comm_heavy,
    compile_tax,
    dataloader,
    dispatch_gap,
    fp32_matmul,
    gpu_idle,
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
    small_kernels,
    step_regimes,
    sync,
    thread_contention,
    unaligned_fp16,
    zero_grad,
)
from .base import Rule

#: Every rule over one trace, in the order ``rules_skipped`` lists them in the JSON (an output
#: other tools read) and the tie-break order of findings of equal cost. A new rule is its module,
#: its line here, its docs section and its test: each family of plugins (rules, fixes, LSP
#: commands, job kinds, subcommands) is an explicit list like this one.
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
    step_regimes.RULE,
]

__all__ = [
    "ALL_RULES",
    "Rule",
    "run_rules",
]


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
