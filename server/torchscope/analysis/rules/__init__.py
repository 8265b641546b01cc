"""The rules over one trace, one module each (DESIGN.md §3 findings catalogue); the rules over
a comparison and over ranks are in ``multi/compile_rules/`` and ``multi/rank_rules/``. Only
``engine`` imports this package.

Order here is only the tie-break order; findings are sorted by cost.
"""

from __future__ import annotations

import importlib
import os

from ..index.context import Context
from ..measure.stages import Metrics
from ..results import Finding
from .base import Rule

#: Where the rules that existed before discovery stand: ``rules_skipped`` in the JSON lists
#: rules in this order (an output other tools read), and it is the tie-break order of findings
#: of equal cost. A rule not listed here follows them, by id; adding a rule never edits this.
_ORDER = (
    "pageable-copy",
    "sync",
    "dataloader",
    "gpu-idle",
    "comm-heavy",
    "hidden-copy",
    "small-kernels",
    "launch-delay",
    "compile-tax",
    "dispatch-gap",
    "many-calls",
    "hot-op",
    "kernel-variance",
    "fp32-matmul",
    "unaligned-fp16",
    "zero-grad",
    "cold-start",
    "low-utilization",
    "heavy-kernel",
    "lazy-init",
    "profiler-flush",
    "profiler-buffer",
    "low-efficiency-gemm",
    "memory-bound-chain",
    "thread-contention",
    "allocation-churn",
    "leak",
    "peak-near-limit",
    "host-to-device-in-loop",
)


def _discover() -> list[Rule]:
    """Every module of this package whose ``RULE`` is a single-trace :class:`Rule`: a new
    rule is one module (plus its docs section and its test), no registration."""
    found: dict[str, Rule] = {}
    for name in _module_names():
        module = importlib.import_module(f"{__name__}.{name}")
        rule = getattr(module, "RULE", None)
        if isinstance(rule, Rule):
            found[rule.id] = rule
    position = {rule_id: i for i, rule_id in enumerate(_ORDER)}
    return sorted(found.values(), key=lambda r: (position.get(r.id, len(_ORDER)), r.id))


def _module_names() -> list[str]:
    """The modules of this package, as ``pkgutil.iter_modules`` lists them for a folder of
    ``.py`` files, without its ``import inspect`` (5 ms of a 0.35 s analysis)."""
    names = {
        entry[:-3]
        for folder in __path__
        for entry in os.listdir(folder)
        if entry.endswith(".py") and entry[:-3].isidentifier() and entry != "__init__.py"
    }
    return sorted(names)


ALL_RULES: list[Rule] = _discover()

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
