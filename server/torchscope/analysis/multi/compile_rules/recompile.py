"""``recompile``: Dynamo compiled again during the measured calls."""

from __future__ import annotations

from ...results import Finding
from .base import CompareContext, CompareRule


class Recompile(CompareRule):
    id = "recompile"
    title = "torch.compile recompiled during the measured calls"
    severity = "warning"
    source = "PyTorch torch.compile troubleshooting (recompilations)"

    def skip(self, cctx: CompareContext) -> str | None:
        return None if cctx.meta.recompiles > 0 else "no recompiles during the measured calls"

    def match(self, cctx: CompareContext) -> list[Finding]:
        message = (
            f"torch.compile recompiled {cctx.meta.recompiles}× during the measured calls: a "
            "guard failed on something that changes between calls (a Python scalar, a shape, a "
            "global); the compiled numbers include those compiles — run with "
            "TORCH_LOGS=recompiles to see which guard"
        )
        return [self.at_def(cctx, message, 0.0)]


RULE = Recompile()
