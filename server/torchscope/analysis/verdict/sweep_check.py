"""A sweep's rows against each other and the crossover line printed under them (issue 55),
beside ``consistency`` (the report's checks) as ``comparison_check`` is: a CNN's rows read
"compute 100 %" beside overhead-bound, and "try larger sizes" stood under rows whose overhead
was the threads."""

from __future__ import annotations

import os
import re

from ..multi.sweep import SweepPoint, past_overhead
from .consistency import SELF_CHECK, SHARE_SLACK, fail


def _row_problems(p: SweepPoint) -> list[str]:
    """One row: an overhead-bound row is not all compute (issue 55: "compute 100 %" beside
    overhead-bound)."""
    if p.ok and not past_overhead(p) and (p.compute_share or 0.0) >= 1.0 - SHARE_SLACK:
        return [f"N={p.n} reads compute {p.compute_share:.0%} beside {p.verdict}"]
    return []


SIZE_BLIND = ("threads", "page-faults")
"""Overheads a larger size does not cure (dispatch, a small GEMM's fixed cost and a
cache-resident op's do: their share falls as the work grows)."""


def sweep_problems(points: list[SweepPoint], line: str) -> list[str]:
    """Every way a sweep's rows contradict each other or the crossover ``line`` under them:
    the crossover's size and verdict are a row's, every row from it on is past the overhead and
    one before it is not; "not overhead-bound at any size" has no overhead-bound row; "try
    larger sizes" never stands under a largest row whose overhead a larger size does not cure
    (``SIZE_BLIND``)."""
    out = [problem for p in points for problem in _row_problems(p)]
    # the line is read off the stable rows (issue 54: an unstable row's verdict may be the load's)
    ok = sorted((p for p in points if p.counted), key=lambda p: p.n)
    found = re.match(r"crossover: (\S+) from \w+=(\d+)", line)
    if found:
        at = int(found.group(2))
        rows = {p.n: p for p in ok}
        if at not in rows or rows[at].verdict != found.group(1):
            out.append(f"the crossover names N={at} as {found.group(1)}, not its row's verdict")
        if any(not past_overhead(p) for p in ok if p.n >= at):
            out.append(f"a row from N={at} on is still overhead-bound under the crossover")
        if not any(not past_overhead(p) for p in ok if p.n < at):
            out.append(f"no row before N={at} is overhead-bound, yet it is a crossover")
    if "not overhead-bound at any size" in line and any(not past_overhead(p) for p in ok):
        out.append("'not overhead-bound at any size' above an overhead-bound row")
    if "try larger sizes" in line and ok and ok[-1].cause in SIZE_BLIND:
        out.append(f"'try larger sizes' while the largest row's overhead is {ok[-1].cause!r}")
    return out


def self_check_sweep(points: list[SweepPoint], line: str) -> None:
    """Raise when ``TORCHSCOPE_SELF_CHECK`` is set and the sweep contradicts its line."""
    if os.environ.get(SELF_CHECK) == "1":
        found = sweep_problems(points, line)
        if found:
            fail("sweep", found)
