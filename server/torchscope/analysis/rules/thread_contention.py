"""``thread-contention``: one intra-op thread runs this function at least 20 % faster.

The timing pass times one batch at ``torch.set_num_threads(1)`` right after each normal sample
(CPU, more than one thread). Each pair saw the same machine, so the ratio one-thread / N-threads
per pair is what is judged: the median ratio must be ≤ ``THREADS_FASTER`` and a one-sided sign test
must say one thread wins more often than chance (p ≤ ``SIGN_TEST_P``), which needs ≥ 5 pairs
(``causes.contention``: the ``threads`` cause uses the same test).
"""

from __future__ import annotations

from ..formatting import format_duration, format_share
from ..index.columns import median
from ..index.context import Context
from ..measure.stages import Metrics
from ..results import Finding
from ..verdict.causes import contention
from .base import Rule


class ThreadContention(Rule):
    """Intra-op threads slower than one thread."""

    id = "thread-contention"
    title = "one thread is faster than PyTorch's intra-op threads"
    severity = "warning"
    source = "timing pass (interleaved batches at torch.set_num_threads(1))"

    def skip(self, ctx: Context, measured: Metrics) -> str | None:
        del measured
        m = ctx.measurements
        if m is None or not m.call_us:
            return "no unprofiled timing (analyze of a trace file)"
        if m.threads <= 1 or not m.single_thread_us:
            return "only one intra-op thread in use (or a GPU run)"
        return None

    def match(self, ctx: Context, measured: Metrics) -> list[Finding]:
        del measured
        m = ctx.measurements
        assert m is not None
        judged = contention(m)
        if judged is None or not judged.contended:
            return []
        ratio = judged.ratio
        many = median(m.call_us)
        one = median(m.single_thread_us)
        return [
            self.finding(
                f"with one thread this function takes {format_duration(one)} per call instead "
                f"of {format_duration(many)} with {m.threads} "
                f"({format_share(1.0 - ratio)} faster, median of {judged.pairs} interleaved "
                "pairs): the intra-op threads wait for each other on this busy machine. "
                "Use torch.set_num_threads(1) (or OMP_NUM_THREADS=1) for work this size, "
                "and leave cores free for DataLoader workers and other processes",
                max(0.0, many - one),
                ratio=ratio,
                threads=m.threads,
                pairs=judged.pairs,
                p_value=judged.p_value,
            )
        ]


RULE = ThreadContention()
