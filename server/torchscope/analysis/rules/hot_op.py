"""``hot-op``: one op takes most of the device time (or of the CPU time in CPU-only runs).

The profiler table's first row, computed: when one op dominates, that op is where any
speed-up has to come from (a better algorithm, lower precision, a fused kernel).
"""

from __future__ import annotations

from ..formatting import format_duration, format_share
from ..index.context import Context
from ..measure.stages import Metrics
from ..results import Finding
from .base import Rule

HOT_OP_SHARE = 0.5
"""One op with more than half of the device (or CPU op) time per step (at exactly half, two
ops share the time and neither dominates)."""


def _is_comm_op(name: str) -> bool:
    return name == "record_param_comms" or name.startswith(("c10d::", "nccl:", "c10d_functional::"))


HOT_OP_MIN_US = 100.0
"""Below 100 µs per step a dominant share is not a hot spot: on CPU it is mostly dispatch and
profiler cost (the guide's 8×8 ``fn`` shows ``aten::mm`` at ~5 µs), on GPU the device is idle
anyway and the verdict says why."""


class HotOp(Rule):
    """An op dominating the device or CPU total."""

    id = "hot-op"
    title = "One op dominates the time"
    severity = "information"
    source = "Hugging Face torch.profiler guide (reading the profiler table)"

    def skip(self, ctx: Context, measured: Metrics) -> str | None:
        return None if measured.top_ops else "no ops inside the steps"

    def match(self, ctx: Context, measured: Metrics) -> list[Finding]:
        ops = [o for o in measured.top_ops if not _is_comm_op(o.name)]
        if not ops:
            return []
        if ctx.device_run:
            # Against the whole non-communication device time per step (comm-heavy owns that).
            steps = measured.steps
            whole = sum(s.kernel_us + s.memcpy_us + s.memset_us - s.comm_us for s in steps) / max(
                1, len(steps)
            )
            total = max(sum(o.device_us for o in ops), whole)
            best = max(ops, key=lambda o: o.device_us)
            value, what = best.device_us, "device"
        else:
            total = sum(s.cpu_op_us for s in measured.steps) / max(1, len(measured.steps))
            best = max(ops, key=lambda o: o.self_cpu_us)
            value, what = best.self_cpu_us, "CPU op"
        if total <= 0 or value / total <= HOT_OP_SHARE:
            return []
        if value < HOT_OP_MIN_US:
            return []
        plural = "" if best.calls == 1 else "s"
        return [
            self.finding(
                f"{best.name} takes {format_share(value / total)} of the {what} time "
                f"({format_duration(value)} per step, {best.calls} call{plural} in all)",
                value,
                op=best.name,
                share=value / total,
            )
        ]


RULE = HotOp()
