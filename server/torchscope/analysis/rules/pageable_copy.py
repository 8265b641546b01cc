"""``pageable-copy``: copies between the device and pageable (not pinned) host memory.

Nsight's ``cuda_memcpy_async`` rule: such a ``cudaMemcpyAsync`` is not asynchronous. A copy to
pageable memory (``Memcpy DtoH (Device -> Pageable)``) waits for everything queued before it
on the stream, a hidden synchronisation that costs far more CPU time than the copy itself
(hta_recsys_a100_rank0: 704 bytes, 2 µs on the GPU, 139-147 ms of CPU per call). From pageable
memory (HtoD) the driver stages through a pinned buffer and the call blocks for the copy.
"""

from __future__ import annotations

from typing import Optional

from ..formatting import format_bytes, format_duration
from ..index.context import Context
from ..index.link import copy_kind, is_pageable
from ..measure.stages import Metrics
from ..results import Finding
from ._common import per_step_median, rt_location, top_op_of_rt
from .base import Rule

PAGEABLE_MIN_US = 20.0
"""Per-step CPU time below which pageable copies are not worth a finding."""

HIDDEN_SYNC_RATIO = 10.0
"""A DtoH call that blocks ≥ 10× longer than its copy runs is waiting for earlier work:
a hidden synchronisation rather than a slow copy."""


_Key = tuple[str, str, Optional[str], Optional[int], str]  # not ``|``: Python 3.9 runs this
"""Copy name, runtime call, file, line, the op it ran under."""


def _groups(ctx: Context) -> dict[_Key, list[tuple[int, int]]]:
    """Pageable copies in a step, by where they came from: (runtime index, memcpy index)."""
    trace = ctx.trace
    groups: dict[_Key, list[tuple[int, int]]] = {}
    for m, copy in enumerate(trace.memcpys):
        if not is_pageable(copy.name):
            continue
        r = ctx.links.memcpy_rt[m]
        if r < 0 or ctx.step_of_rt[r] < 0:
            continue
        file, line = rt_location(ctx, r)
        op = top_op_of_rt(ctx, r)
        under = trace.ops[op].name if op >= 0 else ""
        groups.setdefault((copy.name, trace.runtime[r].name, file, line, under), []).append((r, m))
    return groups


def _message(key: _Key, cost: float, cpu: list[float], gpu: list[float], nbytes: list[int]) -> str:
    """A hidden synchronisation (one DtoH call blocks far longer than its copy runs), or
    blocking copies."""
    copy_name, call, _, _, under = key
    longest = max(range(len(cpu)), key=lambda k: cpu[k])
    inside = f" inside {under}" if under else ""
    if copy_kind(copy_name) == "DtoH" and cpu[longest] >= HIDDEN_SYNC_RATIO * max(
        gpu[longest], 1.0
    ):
        return (
            f"hidden synchronisation: {call} of {format_bytes(nbytes[longest])} to "
            "pageable memory "
            f"({copy_name}){inside} blocks the CPU up to "
            f"{format_duration(cpu[longest])} per call for a copy that runs "
            f"{format_duration(gpu[longest])} "
            "on the GPU: it waits for all work queued before it. Copy into pinned "
            "memory with "
            "non_blocking=True, or read back less often"
        )
    return (
        f"{len(cpu)} {copy_name} copies "
        f"({format_bytes(sum(nbytes))}){inside} "
        f"block the CPU {format_duration(cost)} per step: pageable host memory makes "
        "cudaMemcpyAsync synchronous; use pinned memory (DataLoader(pin_memory=True), "
        "tensor.pin_memory()) and non_blocking=True"
    )


class PageableCopy(Rule):
    """Async copies that touch pageable host memory and so block the CPU."""

    id = "pageable-copy"
    title = "Copy to or from pageable memory blocks the CPU"
    source = "Nsight Systems expert rule cuda_memcpy_async (pin memory)"

    def skip(self, ctx: Context, measured: Metrics) -> str | None:
        if not ctx.trace.memcpys:
            return "no memcpy activity recorded"
        return None

    def match(self, ctx: Context, measured: Metrics) -> list[Finding]:
        trace = ctx.trace
        out: list[Finding] = []
        for key, pairs in _groups(ctx).items():
            cost = per_step_median(
                ctx,
                (
                    (ctx.step_of_rt[r], trace.runtime[r].end - trace.runtime[r].start)
                    for r, _ in pairs
                ),
            )
            if cost < PAGEABLE_MIN_US:
                continue
            cpu = [trace.runtime[r].end - trace.runtime[r].start for r, _ in pairs]
            gpu = [trace.memcpys[m].end - trace.memcpys[m].start for _, m in pairs]
            nbytes = [
                b if isinstance(b := trace.memcpys[m].args.get("bytes"), int) else 0
                for _, m in pairs
            ]
            out.append(
                self.finding(
                    _message(key, cost, cpu, gpu, nbytes),
                    cost,
                    line=key[3],
                    file=key[2],
                    severity="warning",
                    copy=key[0],
                    calls=len(pairs),
                    bytes=sum(nbytes),
                    max_cpu_us=max(cpu),
                    max_gpu_us=max(gpu),
                )
            )
        return out


RULE = PageableCopy()
