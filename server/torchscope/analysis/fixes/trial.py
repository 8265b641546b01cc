"""The outcome of trying a fix: the diff verdict turned into a speed-up, the output check, and
whether the rewrite may be offered as an edit (only when faster *and* the same outputs).

``ratio`` is how many times faster the rewrite is (the original's time per call over the
rewrite's: 2.3 means 2.3× faster, 0.8 slower), with the diff's paired-bootstrap interval
turned the same way. The three refusals: ``raises``, ``changes the outputs``, ``not faster``.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Any, Optional

from ..multi.diff import DiffVerdict
from ..multi.interval import CONFIDENCE

RAISES = "raises"
CHANGES_OUTPUTS = "changes the outputs"
NOT_FASTER = "not faster"


@dataclass(frozen=True)
class FixTrial:
    """``to_dict`` is ``torchscope fix --try --json``'s object."""

    id: str
    verdict: Optional[str]
    ratio: Optional[float]
    interval: Optional[tuple[float, float]]
    same_outputs: bool
    patch: str
    refused: Optional[str]
    """None when the rewrite may be applied, else one of the three refusals."""
    message: str
    detail: str = ""
    """The first output difference, or the rewrite's exception."""

    @property
    def offered(self) -> bool:
        return self.refused is None

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "verdict": self.verdict,
            "ratio": self.ratio,
            "interval": list(self.interval) if self.interval else None,
            "same_outputs": self.same_outputs,
            "patch": self.patch,
            "refused": self.refused,
            "message": self.message,
            "detail": self.detail,
        }

    def measured(self) -> dict[str, Any]:
        """What a finding's ``fix.measured`` holds once the fix was tried."""
        return {
            "verdict": self.verdict,
            "ratio": self.ratio,
            "interval": list(self.interval) if self.interval else None,
            "same_outputs": self.same_outputs,
            "refused": self.refused,
            "message": self.message,
        }


def unified_patch(path: str, before: str, after: str) -> str:
    """A unified diff of the file (``a/PATH`` → ``b/PATH``), as ``git apply`` reads it."""
    return "".join(
        difflib.unified_diff(
            before.splitlines(keepends=True),
            after.splitlines(keepends=True),
            fromfile=f"a/{path}",
            tofile=f"b/{path}",
        )
    )


def _times(value: float, like: float) -> str:
    """``2.3×`` (or ``1.27×`` when ``like``, the headline's ratio, is near 1)."""
    near = 1 / 1.5 < like < 1.5
    return f"{value:.2f}×" if near else f"{value:.1f}×"


def measured_trial(
    fix_id: str, verdict: DiffVerdict, outputs: dict[str, Any], patch: str
) -> FixTrial:
    """The trial of a rewrite that ran: ``verdict`` is the diff's with the original as
    *before* and the rewrite as *after* (its ratio is after / before, per call)."""
    speedup = 1 / verdict.ratio
    low, high = 1 / verdict.ci_high, 1 / verdict.ci_low
    same = bool(outputs.get("same"))
    if verdict.id == "faster":
        effect = f"{_times(speedup, speedup)} faster"
    elif verdict.id == "slower":
        effect = f"{_times(1 / speedup, speedup)} slower"
    else:
        effect = f"no difference (ratio {speedup:.2f})"
    interval = f"{CONFIDENCE:.0%} interval {_times(low, speedup)}–{_times(high, speedup)}"
    interval = interval.replace("%", " %")
    said = "same outputs" if same else f"outputs differ ({outputs.get('detail', '')})"
    if not same:
        refused: Optional[str] = CHANGES_OUTPUTS
    elif verdict.id != "faster":
        refused = NOT_FASTER
    else:
        refused = None
    message = f"measured {effect} ({interval}), {said}"
    if refused == CHANGES_OUTPUTS:
        message += " — not offered: it changes the outputs"
    elif refused == NOT_FASTER:
        message += " — not offered: not faster"
    return FixTrial(
        fix_id,
        verdict.id,
        speedup,
        (low, high),
        same,
        patch,
        refused,
        message,
        "" if same else str(outputs.get("detail", "")),
    )


def raised_trial(fix_id: str, error: str, patch: str) -> FixTrial:
    """The trial of a rewrite that raised (on import or on its first call)."""
    return FixTrial(
        fix_id,
        None,
        None,
        None,
        False,
        patch,
        RAISES,
        f"the rewrite raised: {error} — not offered: it raises",
        error,
    )
