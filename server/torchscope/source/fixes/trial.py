"""The outcome of trying a fix: the diff verdict turned into a speed-up, the output check, and
whether the rewrite may be offered as an edit (only when faster *and* the same outputs).

``ratio`` is how many times faster the rewrite is (the original's time per call over the
rewrite's: 2.3 means 2.3× faster, 0.8 slower), with the diff's paired-bootstrap interval
turned the same way. The refusals: ``raises``, ``changes the outputs`` (values, dtype, shape,
device), ``changes autograd`` (``requires_grad``, gradients), ``changes the state`` (parameters,
buffers, ``training``, in-place changes to inputs), ``no evidence`` (a fix whose assumption the
call does not support: inference-mode where the call may be differentiated through) and ``not
faster``. ``checks`` and ``unchecked`` say what the worker's check compared and what it could
not (``worker/trial_check.py``).
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from typing import Any, Optional

from ...analysis import DiffVerdict
from ...analysis.formatting import ratio_phrase
from ...analysis.results import ABComparison
from ...protocol import CHANGES_AUTOGRAD, CHANGES_OUTPUTS, CHANGES_STATE, NO_EVIDENCE, json_as

RAISES = "raises"
NOT_FASTER = "not faster"
#: The refusals a check in the worker gives, by the id ``DiffResult.outputs["refusal"]`` holds.
CHECK_REFUSALS = (CHANGES_OUTPUTS, CHANGES_AUTOGRAD, CHANGES_STATE, NO_EVIDENCE)


@dataclass(frozen=True)
class FixTrial:
    """``to_builtins`` of it is ``torchscope fix --try --json``'s object (``notes`` are said in
    ``message``, not there)."""

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
    """The first difference the check found, or the rewrite's exception."""
    assumes: str = ""
    """The fix's assumption (``Fix.assumes``), printed with every trial."""
    checks: tuple[str, ...] = ()
    """What the check compared: ``outputs``, ``requires_grad``, ``grads``, ``parameters``,
    ``buffers``, ``training``, ``inputs`` (those the call has), ``no-grad evidence``."""
    unchecked: tuple[str, ...] = ()
    """What it could not compare, each with why."""
    notes: tuple[str, ...] = field(default=(), metadata=json_as(skip=True))
    """How the comparison differed from a plain call (``with dropout off …``)."""
    comparison: Optional[ABComparison] = None
    """The A/B engine's object, rewrite against original (``analysis/multi/ab.py``); None
    when nothing was timed."""

    @property
    def offered(self) -> bool:
        return self.refused is None

    @property
    def summary(self) -> str:
        """The measured line with what was checked and assumed, on one line (the LSP's
        message, MCP ``try_fix``'s text)."""
        parts = [self.message]
        if self.checks:
            parts.append(f"checked: {', '.join(self.checks)}")
        if self.assumes:
            parts.append(f"assumes: {self.assumes}")
        return " · ".join(parts)

    def measured(self) -> dict[str, Any]:
        """What a finding's ``fix.measured`` holds once the fix was tried."""
        return {
            "verdict": self.verdict,
            "ratio": self.ratio,
            "interval": list(self.interval) if self.interval else None,
            "same_outputs": self.same_outputs,
            "refused": self.refused,
            "message": self.message,
            "checks": list(self.checks),
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


def _effect(verdict: DiffVerdict) -> str:
    """``1.24× faster (1.13×–1.32× faster)``, ``no difference: 1.01× the time (0.98×–1.03×)``:
    the one phrase of a ratio and its interval (``formatting.ratio_phrase``), rewrite over
    original."""
    decided = verdict.id in ("faster", "slower")
    phrase = ratio_phrase(verdict.ratio, verdict.ci_low, verdict.ci_high, decided)
    if decided:
        return phrase
    return f"{verdict.id.replace('-', ' ')}: {phrase}"


def _said(outputs: dict[str, Any], refused: Optional[str]) -> str:
    """``same outputs with dropout off (…)`` / ``outputs differ (…)``, and what else held."""
    if refused == CHANGES_OUTPUTS:
        return f"outputs differ ({outputs.get('detail', '')})"
    said = " ".join(["same outputs", *outputs.get("notes", [])])
    if outputs.get("fallback"):  # a trial condition failed: what was measured instead
        said += f" ({outputs['fallback']})"
    checks = set(outputs.get("checks", []))
    held = [] if refused in CHECK_REFUSALS else [c for c in ("grads", "buffers") if c in checks]
    return said + (f", same {' and '.join(held)}" if held else "")


def measured_trial(
    fix_id: str, verdict: DiffVerdict, outputs: dict[str, Any], patch: str, assumes: str = ""
) -> FixTrial:
    """The trial of a rewrite that ran: ``verdict`` is the diff's with the original as
    *before* and the rewrite as *after* (its ratio is after / before, per call); ``outputs``
    the worker's check (``DiffResult.outputs``)."""
    speedup = 1 / verdict.ratio
    low, high = 1 / verdict.ci_high, 1 / verdict.ci_low
    refusal = outputs.get("refusal")
    if refusal is None and not outputs.get("same"):
        refusal = CHANGES_OUTPUTS  # a check without refusal ids
    refused: Optional[str] = refusal if refusal in CHECK_REFUSALS else None
    if refused is None and verdict.id != "faster":
        refused = NOT_FASTER
    message = f"measured {_effect(verdict)}, {_said(outputs, refused)}"
    detail = str(outputs.get("detail", "")) if refused in CHECK_REFUSALS else ""
    if refused == CHANGES_OUTPUTS:
        message += " — not offered: it changes the outputs"
    elif refused in CHECK_REFUSALS:
        message += f" — not offered: {refused}: {detail}"
    elif refused == NOT_FASTER and verdict.id == "inconclusive":
        message += " — not offered: not shown faster (inconclusive)"
    elif refused == NOT_FASTER:
        message += " — not offered: not faster"
    return FixTrial(
        fix_id,
        verdict.id,
        speedup,
        (low, high),
        refused != CHANGES_OUTPUTS,
        patch,
        refused,
        message,
        detail,
        assumes,
        tuple(outputs.get("checks", [])),
        tuple(outputs.get("unchecked", [])),
        tuple(outputs.get("notes", []))
        + ((outputs["fallback"],) if outputs.get("fallback") else ()),
    )


def checked_trial(fix_id: str, outputs: dict[str, Any], patch: str, assumes: str = "") -> FixTrial:
    """The trial of a rewrite the worker's check refused (``outputs["refusal"]``): it was not
    timed, as no speed-up makes a changed program right."""
    refused = str(outputs.get("refusal"))
    detail = str(outputs.get("detail", ""))
    if refused == CHANGES_OUTPUTS:
        message = f"outputs differ ({detail}) — not offered: it changes the outputs"
    else:
        message = f"{_said(outputs, refused)} — not offered: {refused}: {detail}"
    return FixTrial(
        fix_id,
        None,
        None,
        None,
        refused != CHANGES_OUTPUTS,
        patch,
        refused,
        f"not timed: {message}",
        detail,
        assumes,
        tuple(outputs.get("checks", [])),
        tuple(outputs.get("unchecked", [])),
        tuple(outputs.get("notes", [])),
    )


def raised_trial(fix_id: str, error: str, patch: str, assumes: str = "") -> FixTrial:
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
        assumes,
    )
