"""What the modes of a ``torchscope run`` target's calls say (``worker/call_modes.py`` records
them): ``profiled 5 eval calls (no grad) from estimate_loss; the training calls from
train.py:300 took 4× longer: --mode train``. The CLI, the editor's run command and MCP's
``profile_in_run`` show this one sentence."""

from __future__ import annotations

import collections
from statistics import median

from torchscope.protocol import CallSeen, is_train_call

#: Ratios of median call times within this band read "about as long".
SAME_BAND = (0.8, 1.25)


def _is_train(call: CallSeen) -> bool:
    return is_train_call(call.training, call.grad_enabled)


def _kind(call: CallSeen) -> str:
    """``training calls``, ``eval calls (no grad)``, ``calls (no grad)``…"""
    training, grad = call.training, call.grad_enabled
    if training is None:
        return "calls with grad" if grad else "calls (no grad)"
    if training:
        return "training calls" if grad else "training-mode calls (no grad)"
    return "eval calls (grad on)" if grad else "eval calls (no grad)"


def _where(calls: list[CallSeen]) -> str:
    """The most common caller: its function (``estimate_loss``), or ``train.py:300`` for a
    script's top level."""
    caller = collections.Counter(c.caller for c in calls).most_common(1)[0][0]
    function, _, place = caller.partition(" (")
    if function.startswith("<") or not place:
        return place.rstrip(")") or caller
    return function


def mode_label(calls: list[CallSeen]) -> str:
    """``3 eval calls (no grad) from estimate_loss`` and the other groups, comma-separated."""
    groups: dict[str, list[CallSeen]] = {}
    for call in calls:
        groups.setdefault(_kind(call), []).append(call)
    if not groups:
        return "no calls"
    return ", ".join(f"{len(g)} {kind} from {_where(g)}" for kind, g in groups.items())


def _ratio_text(other: list[CallSeen], profiled: list[CallSeen]) -> str:
    ours = median(c.us for c in profiled)
    theirs = median(c.us for c in other)
    if ours <= 0:
        return "were seen"
    ratio = theirs / ours
    if SAME_BAND[0] <= ratio <= SAME_BAND[1]:
        return "took about as long"
    return f"took {ratio:.2g}× longer" if ratio > 1 else f"took {ratio:.2g}× as long"


def mode_note(calls: list[CallSeen], other_calls: list[CallSeen], mode: str = "any") -> str:
    """The sentence about the modes of the calls profiled and seen ("" when all profiled calls
    are training calls and no other was seen). Its advice names only a ``--mode`` the user
    did not pass (``mode``: the one passed, ``any`` when none was)."""
    if not calls:
        return ""
    train = [_is_train(c) for c in calls]
    if any(train) and not all(train):
        return (
            f"profiled calls of different modes ({mode_label(calls)}): --mode train or "
            "--mode eval profiles one kind"
        )
    profiled = f"profiled {mode_label(calls)}"
    if other_calls:
        flag = "--mode train" if _is_train(other_calls[0]) else "--mode eval"
        return (
            f"{profiled}; the {_kind(other_calls[0])} from {_where(other_calls)} "
            f"{_ratio_text(other_calls, calls)}: {flag}"
        )
    if all(train):
        return ""
    if mode != "any":  # the user asked for these calls: nothing to advise
        return profiled
    return f"{profiled}; no training call was seen (--mode train waits for one)"
