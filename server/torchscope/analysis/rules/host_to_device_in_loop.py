"""``host-to-device-in-loop``: a line inside a Python loop allocates on the CUDA device on
every iteration — a tensor created or copied to the device that is the same each time and
could be made once, before the loop."""

from __future__ import annotations

from ..formatting import format_bytes
from ..index.context import Context
from ..measure.lines import line_stats
from ..measure.stages import Metrics
from ..results import Finding
from ._common import without_cuda_memory
from .base import Rule

#: Ops that make a new device tensor from nothing or from host data.
CREATION_OPS = frozenset(
    {
        "aten::to",
        "aten::_to_copy",
        "aten::copy_",
        "aten::empty",
        "aten::zeros",
        "aten::ones",
        "aten::full",
        "aten::arange",
        "aten::tensor",
        "aten::scalar_tensor",
        "aten::lift_fresh",
        "aten::randn",
        "aten::rand",
        "aten::eye",
    }
)


class HostToDeviceInLoop(Rule):
    id = "host-to-device-in-loop"
    title = "Device tensor created on every loop iteration"
    source = "PyTorch performance tuning guide (create tensors directly on the device, once)"

    def skip(self, ctx: Context, measured: Metrics) -> str | None:
        return without_cuda_memory(measured)

    def match(self, ctx: Context, measured: Metrics) -> list[Finding]:
        analysis = measured.memory
        assert analysis is not None
        hits = {s.line: s.hits for s in line_stats(ctx)}
        out: list[Finding] = []
        for line, memory in sorted(analysis.lines.items()):
            cuda = memory.device.get("cuda")
            runs = hits.get(line, 0.0)
            if cuda is None or runs <= 1 or cuda.allocs < runs:
                continue
            made = [a for a in memory.largest if a.device == "cuda" and a.op in CREATION_OPS]
            if not made:
                continue
            out.append(
                self.finding(
                    f"line {line} runs {runs:.0f}× per call and allocates "
                    f"{format_bytes(cuda.alloc_bytes)} on the GPU each call through "
                    f"`{made[0].op}`: create the tensor once before the loop "
                    "(or directly on the device) and reuse it.",
                    0.0,
                    line=line,
                    allocs_per_call=cuda.allocs,
                    bytes_per_call=cuda.alloc_bytes,
                )
            )
        return out


RULE = HostToDeviceInLoop()
