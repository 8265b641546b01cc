"""``compile-slower``: the compiled call costs more than the eager one (unprofiled)."""

from __future__ import annotations

from ...formatting import format_duration
from ...results import Finding
from .base import CompareContext, CompareRule


class CompileSlower(CompareRule):
    id = "compile-slower"
    title = "torch.compile costs more per call than eager"
    severity = "warning"
    source = "Hugging Face torch.profiler guide (measure torch.compile, don't assume it helps)"

    def skip(self, cctx: CompareContext) -> str | None:
        if cctx.verdict.id != "keep-eager":
            return "the compiled call is not slower than eager beyond the band"
        return None

    def match(self, cctx: CompareContext) -> list[Finding]:
        e, c = cctx.eager.median_us or 0.0, cctx.compiled.median_us or 0.0
        wrapper = next((f for f in cctx.compiled_report.findings if f.rule == "compile-tax"), None)
        why = (
            f"; its wrapper (Dynamo's guard check, the AOT runtime wrapper) alone takes "
            f"{format_duration(wrapper.cost_us)} of CPU per profiled call"
            if wrapper
            else ""
        )
        graphs = cctx.compiled.compiled.graphs if cctx.compiled.compiled else []
        code = f"; generated code: {graphs[0].code_path}" if graphs and graphs[0].code_path else ""
        message = (
            f"torch.compile costs {format_duration(c - e)} more per call than eager "
            f"({format_duration(e)} → {format_duration(c)}, unprofiled){why}: at this size "
            f"the fixed per-call cost outweighs what the fused code saves{code}"
        )
        return [self.at_def(cctx, message, c - e)]


RULE = CompileSlower()
