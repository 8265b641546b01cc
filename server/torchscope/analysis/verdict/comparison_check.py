"""A comparison never contradicts itself (issue 54): ``comparison_problems`` holds an
:class:`~..results.ABComparison` to its own numbers, independently of the engine that made it
(``analysis/multi/ab.py``). ``consistency.py`` calls it, so with ``TORCHSCOPE_SELF_CHECK=1``
every comparison the suite makes is checked.

- ``faster`` has all of the interval below 1 / (1 + band), ``slower`` all of it above
  1 + band, ``no-difference`` all of it within the band; ``inconclusive`` is none of those
  unless the reason says the machine was too busy to decide.
- The interval holds the ratio, and the interval's ends are in order.
- The phrase's direction follows the numbers: "slower" only beside an interval all at or above
  1 and a ``slower`` decision, "faster" likewise, and one pair of parentheses.
"""

from __future__ import annotations

import math

from ..results import COMPARISON_DECISIONS, ABComparison

SLACK = 1e-9


def _decision_problems(c: ABComparison, low: float, high: float) -> list[str]:
    lower, upper = 1 / (1 + c.band), 1 + c.band
    clears_down, clears_up = high < lower, low > upper
    inside = low >= lower - SLACK and high <= upper + SLACK
    wanted = {
        "faster": clears_down,
        "slower": clears_up,
        "no-difference": inside,
        "inconclusive": not (clears_down or clears_up or inside) or "too busy" in c.reason,
    }
    if c.decision not in COMPARISON_DECISIONS:
        return [f"comparison decision {c.decision!r} is not one of {COMPARISON_DECISIONS}"]
    if not wanted[c.decision]:
        return [f"comparison says {c.decision} for the interval {low:.3f}–{high:.3f} (±{c.band})"]
    return []


def _phrase_problems(c: ABComparison, low: float, high: float) -> list[str]:
    phrase = c.phrase
    out = []
    if phrase.count("(") > 1 or phrase.count(")") > 1:
        out.append(f"comparison phrase {phrase!r} has more than one pair of parentheses")
    for word in ("faster", "slower"):
        if word in phrase and c.decision != word:
            out.append(f"comparison phrase {phrase!r} says {word}; its decision is {c.decision}")
    if "slower" in phrase and low < 1 - SLACK:
        out.append(f"comparison phrase {phrase!r} says slower beside an interval from {low:.3f}")
    if "faster" in phrase and high > 1 + SLACK:
        out.append(f"comparison phrase {phrase!r} says faster beside an interval to {high:.3f}")
    return out


def comparison_problems(comparison: ABComparison) -> list[str]:
    """Every way ``comparison`` contradicts itself (empty: none); see the module docstring."""
    c = comparison
    if len(c.interval) != 2:
        return [f"comparison interval {c.interval} is not [low, high]"]
    low, high = c.interval
    if not all(math.isfinite(x) for x in (c.ratio, low, high)):
        return []  # no number to hold the words to (a side that never ran)
    out = []
    if not low - SLACK <= c.ratio <= high + SLACK:
        out.append(f"comparison ratio {c.ratio:.3f} outside its interval {low:.3f}–{high:.3f}")
    if c.dropped_rounds > c.rounds:
        out.append(f"{c.dropped_rounds} rounds dropped of {c.rounds}")
    return out + _decision_problems(c, low, high) + _phrase_problems(c, low, high)
