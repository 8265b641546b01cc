"""The A/B engine's decisions, dropped rounds, phrase and self-check (issue 54). The oracle of
each case is the rounds it is built from (a known ratio, known waits), not a stored number."""

from __future__ import annotations

import random
from dataclasses import replace

from torchscope.analysis import ABRounds, compare_rounds
from torchscope.analysis.formatting import ratio_phrase
from torchscope.analysis.verdict.comparison_check import comparison_problems
from torchscope.protocol import WAIT_DROP, Machine, to_builtins

CONTRACT = {
    "decision",
    "ratio",
    "interval",
    "band",
    "rounds",
    "dropped_rounds",
    "spread",
    "busy_share",
    "stable",
    "reason",
}


def _rounds(n: int, ratio: float, jitter: float, seed: int = 1) -> tuple[list[float], list[float]]:
    rng = random.Random(seed)
    a = [1000.0 * (1 + jitter * rng.random()) for _ in range(n)]
    b = [x * ratio * (1 + jitter * (rng.random() - 0.5)) for x in a]
    return a, b


def test_four_decisions_and_the_contract() -> None:
    slower = compare_rounds(ABRounds(*_rounds(60, 1.3, 0.05)))
    assert slower.decision == "slower" and slower.interval[0] > 1.05
    faster = compare_rounds(ABRounds(*_rounds(60, 0.7, 0.05)))
    assert faster.decision == "faster" and faster.interval[1] < 1 / 1.05
    same = compare_rounds(ABRounds(*_rounds(60, 1.0, 0.02)))
    assert same.decision == "no-difference"
    assert same.interval[0] >= 1 / 1.05 and same.interval[1] <= 1.05
    noisy = compare_rounds(ABRounds(*_rounds(12, 1.08, 0.6)))
    assert noisy.decision == "inconclusive", noisy
    assert noisy.reason.startswith("inconclusive: ")
    for c in (slower, faster, same, noisy):
        data = to_builtins(c)
        assert set(data) >= CONTRACT, data
        assert set(data["spread"]) == {"before", "after"}
        assert comparison_problems(c) == []


def test_rounds_with_a_core_held_are_dropped_and_counted() -> None:
    a, b = _rounds(40, 1.3, 0.05)
    # Ten rounds in which B waited for a CPU: B read 3× slower there (the load, not the code).
    b_loaded = [x * 3 if i < 10 else x for i, x in enumerate(b)]
    waits = [x * (WAIT_DROP + 0.3) if i < 10 else 0.0 for i, x in enumerate(b_loaded)]
    busy = Machine(busy_share=0.45, other_cores=0.9, steal_cores=0.0, cores=2)
    c = compare_rounds(ABRounds(a, b_loaded, [0.0] * 40, waits, busy))
    assert c.rounds == 40 and c.dropped_rounds == 10
    assert c.interval[0] <= 1.3 <= c.interval[1] * 1.02
    assert "10 of 40 rounds dropped" in c.reason and "45 %" in c.reason
    assert c.busy_share == 0.45
    # Load both halves of a round shared cancels in their ratio: those rounds stay.
    alike = compare_rounds(ABRounds(a, b, [x * 0.5 for x in a], [x * 0.5 for x in b], busy))
    assert alike.dropped_rounds == 0 and alike.decision == "slower"
    # Too few clean rounds: the machine was too busy to decide.
    all_waited = [x * (WAIT_DROP + 0.1) for x in b]
    busy_c = compare_rounds(ABRounds(a, b, [0.0] * 40, all_waited, busy))
    assert busy_c.decision == "inconclusive" and "too busy" in busy_c.reason
    assert not busy_c.stable


def test_a_side_unstable_makes_the_comparison_unstable_and_says_why() -> None:
    a, b = _rounds(40, 1.3, 0.05)
    line = (
        "unstable: the timed calls spread by 60 % of their median; rerun, or raise --timing-budget"
    )
    c = compare_rounds(ABRounds(a, b, b_unstable=line, added=7))
    assert not c.stable and c.added_rounds == 7
    # said as profile says it: one "unstable:", the side's why, the advice once
    assert c.reason.startswith("unstable: slower: ") and c.reason.count("unstable:") == 1
    assert "the timed calls spread by 60 % of their median" in c.reason
    assert c.reason.endswith("; rerun, or raise --timing-budget")
    assert "7 more rounds measured past the budget" in c.reason


def test_one_phrase_per_direction() -> None:
    assert ratio_phrase(2.3, 1.1, 3.3) == "2.3× slower (1.1×–3.3× slower)"
    assert ratio_phrase(1 / 1.24, 1 / 1.32, 1 / 1.13) == "1.24× faster (1.13×–1.32× faster)"
    assert ratio_phrase(0.43, 0.30, 1.2) == "0.43× the time (0.30×–1.20×)"
    # The "2.3× slower (95 % interval 0.3×–0.9×)": an interval on the faster side is
    # never called slower.
    assert "slower" not in ratio_phrase(2.3, 0.3, 0.9)
    assert "faster" not in ratio_phrase(1.02, 0.99, 1.04, directed=False)
    for phrase in (ratio_phrase(2.3, 1.1, 3.3), ratio_phrase(0.43, 0.30, 1.2)):
        assert phrase.count("(") == 1 and phrase.count(")") == 1


def test_the_self_check_catches_a_contradiction() -> None:
    c = compare_rounds(ABRounds(*_rounds(60, 1.3, 0.05)))
    assert comparison_problems(replace(c, decision="faster"))
    assert comparison_problems(replace(c, decision="no-difference"))
    assert comparison_problems(replace(c, phrase="1.3× faster (1.2×–1.4× faster)"))
    assert comparison_problems(replace(c, phrase="1.3× slower ((1.2×–1.4×) slower)"))
    assert comparison_problems(replace(c, ratio=5.0))


def test_every_text_face_shows_the_same_decision() -> None:
    """The CLI's and the notebook's text (``render_comparison``), the editor's compare panel
    (``comparison_markdown``) and ``fix --try``'s text show the engine's one decision and
    phrase, and an unstable side's ``unstable: …``."""
    from torchscope.analysis.multi.comparison import CompareSide, Comparison, SideVerdict
    from torchscope.report.compare import comparison_markdown, render_comparison
    from torchscope.report.fix import render_trial
    from torchscope.source.fixes.trial import FixTrial

    def side(us: float, **more: object) -> CompareSide:
        return CompareSide(us, us, us, us, 10, us, us, 0.0, 0.0, [], 0.0, 0.0, 6.0, [],
                           SideVerdict("overhead-bound", "…"), **more)  # type: ignore[arg-type]  # fmt: skip

    a, b = _rounds(60, 1.3, 0.05)
    c = compare_rounds(ABRounds(a, b))
    why = "unstable: the timed calls spread by 60 % of their median; rerun, or raise --timing-budget"
    compare = Comparison(
        "default", side(9.0), side(12.0, stable=False, unstable_reason=why), comparison=c
    )
    line = f"comparison: slower: {c.phrase}; 60 rounds"
    assert c.phrase.startswith("1.3") and c.phrase.endswith("slower)")
    for text in (render_comparison(compare), comparison_markdown(compare)):
        assert line in text and f"compiled: {why}" in text, text
    trial = FixTrial("sdpa", "slower", 1 / c.ratio, None, True, "", "not faster", "m", comparison=c)
    assert line in render_trial(trial, False, False)
