"""A sweep's rows carry profile's stability; the crossover is read from stable rows only, and
an unstable row is marked in the table, the Markdown and the chart (issue 54). Adjacent sizes
are compared by the A/B engine."""

from __future__ import annotations

from dataclasses import replace

from torchscope.analysis import Sweep, SweepPoint, crossover, sweep_step
from torchscope.protocol import Machine, Measurements
from torchscope.report.sweep import render_sweep, sweep_markdown
from torchscope.report.sweep_chart import sweep_svg

REASON = (
    "unstable: another process held 90 % of a core during the job; rerun, or raise --timing-budget"
)


def point(n: int, verdict: str, us: float, stable: bool = True) -> SweepPoint:
    share = 0.9 if verdict != "overhead-bound" else 0.2
    p = SweepPoint(n, us, us, 0.0, share, us * share, verdict)
    return p if stable else replace(p, stable=False, unstable_reason=REASON, busy_share=0.45)


def test_an_unstable_row_is_left_out_of_the_crossover_and_marked() -> None:
    # The Llama block: 37.9 ms at batch 2 (the load), 8.4 ms at 8, 141 ms at 16.
    rows = [
        point(1, "overhead-bound", 5000.0),
        point(2, "compute-bound", 37900.0, stable=False),
        point(8, "overhead-bound", 8400.0),
        point(16, "compute-bound", 141000.0),
    ]
    assert crossover(rows) == 16
    # Counted, the unstable N=2 (compute-bound) would put the crossover at 2:
    flipped = [replace(rows[2], verdict="compute-bound"), rows[3]]
    assert crossover([rows[0], rows[1], *flipped]) == 8
    unstable_last = [point(1, "overhead-bound", 10.0), point(4, "compute-bound", 99.0, False)]
    assert crossover(unstable_last) is None  # only one stable row: nothing to cross
    assert crossover([*unstable_last[:1], replace(unstable_last[1], stable=True)]) == 4

    text = render_sweep(rows, crossover(rows))
    assert "compute-bound (unstable)" in text
    assert f"N=2: {REASON} (not used for the crossover)" in text
    sweep = Sweep("N", "f(N)", rows, crossover(rows))
    assert "compute-bound (unstable)" in sweep_markdown("f", sweep)
    svg = sweep_svg(rows, crossover(rows), "f")
    assert svg.count('data-unstable="true"') == 1
    assert 'data-n="2"' in svg.split('data-unstable="true"')[0].rsplit("<circle", 1)[1]


def test_adjacent_sizes_are_compared_by_the_engine() -> None:
    small = Measurements(0.0, [100.0 + i % 3 for i in range(30)], 1.0)
    big = Measurements(0.0, [400.0 + i % 5 for i in range(30)], 1.0)
    busy = Machine(busy_share=0.3, other_cores=0.6, steal_cores=0.0, cores=2)
    step = sweep_step(8, small, 32, replace(big, machine=busy))
    assert step is not None and (step.n_from, step.n_to) == (8, 32)
    c = step.comparison
    assert c.decision == "slower" and c.interval[0] <= 4.0 <= c.interval[1] * 1.02
    assert "separate jobs" in c.reason and c.busy_share == 0.3
    assert sweep_step(8, small, 32, Measurements(0.0, [], 1.0)) is None
