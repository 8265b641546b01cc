"""``compile-copy``: a copy the compiled run makes and eager does not."""

from __future__ import annotations

from ...formatting import format_bytes
from ...results import Finding
from .base import CompareContext, CompareRule


class CompileCopy(CompareRule):
    id = "compile-copy"
    title = "A copy torch.compile added"
    severity = "information"
    source = "Hugging Face torch.profiler guide (the 4096×4096 torch.compile bias copy)"

    def skip(self, cctx: CompareContext) -> str | None:
        return None if cctx.added_copies else "the compiled run adds no copy"

    def match(self, cctx: CompareContext) -> list[Finding]:
        out = []
        for copy in cctx.added_copies:
            what = "bias copy" if copy.is_bias_copy else "copy"
            where = f" inside {copy.within}" if copy.within else ""
            size = format_bytes(copy.bytes) if copy.bytes else "unknown bytes"
            epilogue = (
                f" ({copy.within} first copies the bias into its output, then runs the GEMM)"
                if copy.is_bias_copy
                else ""
            )
            kind = "host" if copy.kind == "cpu" else copy.kind
            message = (
                f"torch.compile adds a {size} {kind} {what} per call: {copy.op}{where}"
                f"{epilogue}; eager does not copy here"
            )
            out.append(self.at_def(cctx, message, copy.time_us))
        return out


RULE = CompileCopy()
