"""``allocation-churn``: the call pays for fresh memory — minor page faults above 10 % of its
time, or large temporaries allocated and freed on every call (Scalene's and memray's per-line
allocation view; the page-fault cost is calibrated by the worker on the machine itself)."""

from __future__ import annotations

from ...protocol import GLIBC_MMAP_MAX, MIN_FAULTS_PER_CALL
from ..formatting import format_bytes, format_duration, format_share
from ..index.context import Context
from ..measure.memory import page_fault_numbers, ran_us
from ..measure.stages import Metrics
from ..results import Finding
from .base import Rule

FAULT_SHARE = 0.10
"""Page faults costing more than 10 % of the call: worth preallocating."""


LARGE_TEMPORARY_BYTES = GLIBC_MMAP_MAX
"""A line that allocates and frees at least 32 MiB per call on the CPU: above every malloc
threshold, so each call maps (and faults in) fresh pages."""

PAGE_BYTES = 4096


class AllocationChurn(Rule):
    id = "allocation-churn"
    title = "Fresh memory on every call"
    source = "Linux minor page faults (getrusage), calibrated per machine; Scalene, memray"

    def skip(self, ctx: Context, measured: Metrics) -> str | None:
        faults, _, _, _ = page_fault_numbers(ctx)
        if faults is None and measured.memory is None:
            return "no page-fault counts and no memory events (profile with torchscope)"
        return None

    def _temporaries(self, measured: Metrics) -> list[tuple[int, float]]:
        """(line, bytes allocated and freed within the call on the CPU), largest first."""
        analysis = measured.memory
        if analysis is None:
            return []
        out = []
        for line, memory in analysis.lines.items():
            cpu = memory.device.get("cpu")
            if cpu is not None and cpu.alloc_bytes - cpu.alive_bytes > 0:
                out.append((line, cpu.alloc_bytes - cpu.alive_bytes))
        return sorted(out, key=lambda t: -t[1])

    def match(self, ctx: Context, measured: Metrics) -> list[Finding]:
        faults, cost, share, per_fault = page_fault_numbers(ctx)
        temporaries = self._temporaries(measured)
        large = [(line, b) for line, b in temporaries if b >= LARGE_TEMPORARY_BYTES]
        faulting = (
            faults is not None
            and cost is not None
            and faults >= MIN_FAULTS_PER_CALL
            and (share or 0.0) > FAULT_SHARE
        )
        if not faulting and not large:
            return []
        named = large or temporaries[:3]
        where = ", ".join(f"line {line} ({format_bytes(b)})" for line, b in named[:3])
        if faulting:
            assert faults is not None and cost is not None
            head = f"{faults:.0f} page faults per call ≈ {_fault_time(ctx, cost, share)}"
            m = ctx.measurements
            call = ran_us(m) if m is not None else 0.0
            # CPU time over every thread can exceed the call; what it costs the call is the call.
            estimated = min(cost, call) if call > 0 else cost
        else:
            pages = sum(b for _, b in large) / PAGE_BYTES
            estimated = pages * per_fault
            head = f"{format_bytes(sum(b for _, b in large))} of temporaries per call"
        message = (
            f"{head}: fresh memory is mapped on every call"
            + (f"; temporaries on {where}" if where else "; profile with --memory to name lines")
            + ". Write into preallocated tensors (`out=`), use in-place ops, or keep buffers "
            "across calls."
        )
        line = named[0][0] if named else _hottest_line(ctx)
        return [
            self.finding(
                message,
                estimated,
                line=line,
                page_faults_per_call=faults,
                page_fault_us=cost,
                page_fault_share=share,
                lines=[line for line, _ in named],
                temporary_bytes=[b for _, b in named],
            )
        ]


def _hottest_line(ctx: Context) -> int | None:
    """Without memory events the faults are paid where the time goes: the hottest line."""
    from ..measure.lines import line_stats

    lines = line_stats(ctx)
    return lines[0].line if lines else None


RULE = AllocationChurn()


def _fault_time(ctx: Context, cost: float, share: float | None) -> str:
    """``3.1 ms (100 % of the call)``; faults × their cost is CPU time over every thread that
    faulted, so where it exceeds the call the call is what they cost it (as the verdict
    says), and the CPU time is said beside it."""
    m = ctx.measurements
    call = ran_us(m) if m is not None else 0.0
    if 0 < call < cost:
        spent = format_duration(cost)
        return f"{format_duration(call)} (all of the call: {spent} of CPU over its threads)"
    return f"{format_duration(cost)} ({format_share(share or 0.0)} of the call)"
