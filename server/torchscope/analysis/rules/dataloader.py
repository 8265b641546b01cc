"""``dataloader``: the step spends a noticeable share inside DataLoader ``__next__``.

The TensorBoard profiler plugin's recommendation: DataLoader time above 5 % of a step means
input loading is on the critical path: raise ``num_workers``, use ``pin_memory=True`` and
``persistent_workers=True``, or move preprocessing off the training process.
"""

from __future__ import annotations

from ..formatting import format_duration, format_share
from ..index.columns import is_dataloader, median
from ..index.context import Context
from ..measure.stages import Metrics
from ..results import Finding
from .base import Rule

DATALOADER_SHARE = 0.05
"""TensorBoard profiler plugin: DataLoader time > 5 % of the step triggers its advice."""


class DataLoaderTime(Rule):
    """DataLoader iteration on the step's critical path."""

    id = "dataloader"
    title = "Waiting for the DataLoader"
    source = "PyTorch TensorBoard profiler plugin (DataLoader > 5 % of step → num_workers)"

    def skip(self, ctx: Context, measured: Metrics) -> str | None:
        if not any(is_dataloader(a.name) for a in ctx.trace.annotations):
            return "no DataLoader iteration in the trace"
        return None

    def match(self, ctx: Context, measured: Metrics) -> list[Finding]:
        metrics = measured.steps
        wall = median([s.wall_us for s in metrics])
        loader = median([s.dataloader_us for s in metrics])
        if wall <= 0 or loader / wall < DATALOADER_SHARE:
            return []
        names = {a.name for a in ctx.trace.annotations if is_dataloader(a.name)}
        single = any("_SingleProcessDataLoaderIter" in n for n in names)
        advice = (
            "load in worker processes: DataLoader(num_workers=N, pin_memory=True, "
            "persistent_workers=True)"
            if single
            else "add workers or prefetch (prefetch_factor); check the dataset's __getitem__ cost"
        )
        if ctx.device_run:
            wait = median([s.input_wait_us for s in metrics])
            cost = wait
            text = (
                f"DataLoader __next__ takes {format_duration(loader)} per step "
                f"({format_share(loader / wall)}), "
                f"{format_duration(wait)} of it with the GPU "
                f"idle{' (num_workers=0)' if single else ''}: {advice}"
            )
        else:
            cost = loader
            text = (
                f"DataLoader __next__ takes {format_duration(loader)} per step "
                f"({format_share(loader / wall)}): {advice}"
            )
        first = next(i for i, a in enumerate(ctx.trace.annotations) if is_dataloader(a.name))
        file, line = ctx.sources.of_annotation(first)
        return [
            self.finding(
                text, cost, line=line, file=file, dataloader_us=loader, num_workers_zero=single
            )
        ]


RULE = DataLoaderTime()
