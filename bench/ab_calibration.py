"""Is the A/B engine calibrated? Two functions with a known, fixed true ratio, quiet and with
one core held (issue 54's acceptance).

A is a deterministic piece of pure-Python work repeated N times, B the same work repeated
1.3·N times (true ratio B / A = 1.3; the loop around it costs well under 1 %), timed by the
worker's loop (``worker/ab_rounds.time_interleaved``) and decided by the engine
(``analysis/multi/ab.compare_rounds``), in this process, ``--runs`` times per condition:

- **quiet**: nothing of ours beside it (the machine may still be shared: that is the point);
- **held**: a busy-loop process pinned (``os.sched_setaffinity``) to the first CPU this process
  may use, for the whole condition.

And A against A (true ratio 1.0) in both conditions. Prints one row per case: runs, how many
intervals hold the true ratio, the decisions, coverage (the interval holds the truth, or the
run said ``inconclusive``), false-positive rate (a confident wrong direction: the opposite
direction for 1.3, ``faster``/``slower`` for A/A), median rounds (kept/timed) and median busy
share. ``--json`` prints the runs instead (``tests/worker/test_ab_calibration.py`` reads it).

    .venv/bin/python bench/ab_calibration.py [--runs 10] [--budget 0.25] [--json]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Callable

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "server"))
sys.path.insert(0, str(REPO))

from tests.core_holder import core_held  # noqa: E402

from torchscope.analysis import ABRounds, compare_rounds  # noqa: E402
from torchscope.worker.ab_rounds import time_interleaved  # noqa: E402

TRUE_RATIO = 1.3
UNIT_REPS = 40
"""Repetitions of the unit of work in A (about 1 ms a call); B does 1.3 × as many."""


def unit() -> int:
    """The deterministic unit of work."""
    return sum(i * i for i in range(250))


def work(reps: int) -> int:
    total = 0
    for _ in range(reps):
        total += unit()
    return total


def one_run(ratio: float, budget_s: float) -> dict[str, Any]:
    """A against B once: the engine's comparison as a dict."""
    reps_b = round(UNIT_REPS * ratio)
    calls: list[Callable[[], int]] = [lambda: work(UNIT_REPS), lambda: work(reps_b)]
    estimates = []
    for call in calls:
        start = time.perf_counter()
        call()
        estimates.append(time.perf_counter() - start)
    timed = time_interleaved(calls, estimates, 0, budget_s, False)
    rounds = ABRounds(
        timed.call_us[0],
        timed.call_us[1],
        timed.wait_us[0],
        timed.wait_us[1],
        timed.machine,
        timed.unstable[0],
        timed.unstable[1],
        timed.rounds_added,
    )
    c = compare_rounds(rounds)
    truth = reps_b / UNIT_REPS
    return {
        "true_ratio": truth,
        "decision": c.decision,
        "ratio": c.ratio,
        "interval": c.interval,
        "rounds": c.rounds,
        "dropped_rounds": c.dropped_rounds,
        "added_rounds": c.added_rounds,
        "busy_share": c.busy_share,
        "stable": c.stable,
        "covers": c.interval[0] <= truth <= c.interval[1],
        "phrase": c.phrase,
    }


def wrong(run: dict[str, Any]) -> bool:
    """A confident wrong answer: the opposite direction, or any direction for A against A."""
    if run["true_ratio"] == 1.0:
        return bool(run["decision"] in ("faster", "slower"))
    return bool(run["decision"] in ("faster", "no-difference"))


def calibrate(runs: int, budget_s: float) -> dict[str, list[dict[str, Any]]]:
    """case name → its runs; cases: 1.3 and A/A, quiet and held."""
    out: dict[str, list[dict[str, Any]]] = {}
    for held in (False, True):
        with core_held() if held else contextlib.nullcontext():
            for ratio, name in ((TRUE_RATIO, "1.3"), (1.0, "A/A")):
                case = f"{name} {'held' if held else 'quiet'}"
                out[case] = [one_run(ratio, budget_s) for _ in range(runs)]
    return out


def table(cases: dict[str, list[dict[str, Any]]]) -> str:
    rows = [
        "| case | runs | interval holds truth | decisions | coverage | false positives "
        "| median rounds kept/timed | median busy share |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for case, runs in cases.items():
        n = len(runs)
        holds = sum(r["covers"] for r in runs)
        covered = sum(r["covers"] or r["decision"] == "inconclusive" for r in runs)
        decisions = ", ".join(
            f"{d} {sum(r['decision'] == d for r in runs)}"
            for d in ("faster", "slower", "no-difference", "inconclusive")
            if any(r["decision"] == d for r in runs)
        )
        kept = statistics.median(r["rounds"] - r["dropped_rounds"] for r in runs)
        timed = statistics.median(r["rounds"] for r in runs)
        busy = [r["busy_share"] for r in runs if r["busy_share"] is not None]
        rows.append(
            f"| {case} | {n} | {holds}/{n} | {decisions} | {covered}/{n} "
            f"| {sum(wrong(r) for r in runs)}/{n} | {kept:g}/{timed:g} "
            f"| {statistics.median(busy) * 100:.0f} % |"
            if busy
            else f"| {case} | {n} | {holds}/{n} | {decisions} | {covered}/{n} "
            f"| {sum(wrong(r) for r in runs)}/{n} | {kept:g}/{timed:g} | n/a |"
        )
    return "\n".join(rows)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--budget", type=float, default=0.25, help="seconds per side per run")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    cases = calibrate(args.runs, args.budget)
    print(json.dumps(cases) if args.json else table(cases))
    return 0


if __name__ == "__main__":
    sys.exit(main())
