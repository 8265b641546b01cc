"""How far the timing can be trusted, in the words every face shows: the unprofiled timing
sentence (median, range, samples, spread), the machine's load, and an unstable verdict's line
(``analysis/verdict/stability.py``). The terminal report, the ``def`` hover, the verdict diagnostic
and the notebook's HTML all take them from here."""

from __future__ import annotations

from torchscope.analysis.formatting import format_duration, format_share
from torchscope.analysis.results import ABComparison, Report, Timing

#: From this busy share on, the report names the machine's load even when the verdict stands.
BUSY_SHOWN = 0.1


def timing_numbers(timing: Timing) -> str:
    """``median 1.2 ms per call (min …, max …, 40 samples, spread 4 %)``; ``2000 calls in 20
    samples`` when a sample is a batch's mean."""
    count = f"{timing.samples} samples"
    if timing.calls != timing.samples:
        count = f"{timing.calls} calls in {count}" if timing.samples else f"{timing.calls} calls"
    return (
        f"median {format_duration(timing.median_us)} per call "
        f"(min {format_duration(timing.min_us)}, max {format_duration(timing.max_us)}, "
        f"{count}, spread {format_share(timing.spread)})"
    )


def machine_line(report: Report) -> str | None:
    """``machine: 24 % busy with other work during the job (…)``; None when quiet or unknown."""
    m = report.machine
    if m is None or m.busy_share < BUSY_SHOWN:
        return None
    steal = f", {format_share(m.steal_cores)} of a core stolen" if m.steal_cores >= 0.05 else ""
    return (
        f"machine: {format_share(m.busy_share)} of its {m.cores} cores busy with other work "
        f"during the job ({m.other_cores:.2f} cores{steal})"
    )


def unstable_line(report: Report) -> str | None:
    """The unstable verdict's ``unstable: …; rerun, or raise --timing-budget`` (None: stable)."""
    verdict = report.verdict
    return None if verdict.stable else verdict.unstable_reason or "unstable"


def stability_lines(report: Report) -> list[str]:
    """The unstable line and the machine's load, for the terminal report and the notebook."""
    return [line for line in (unstable_line(report), machine_line(report)) if line]


def comparison_lines(
    comparison: ABComparison | None, indent: str = "  ", reason: bool = False
) -> list[str]:
    """The A/B engine's decision in words, for every command's text: ``comparison: slower:
    2.3× slower (1.1×–3.3× slower); 80 rounds, 3 dropped (a core held for one side); machine
    24 % busy``; with ``reason`` (where no headline carries it), then its reason when it is
    unstable (``unstable: …`` as ``profile`` says it) or inconclusive."""
    if comparison is None:
        return []
    c = comparison
    dropped = f", {c.dropped_rounds} dropped (a core held for one side)" if c.dropped_rounds else ""
    busy = f"; machine {format_share(c.busy_share)} busy" if c.busy_share is not None else ""
    out = [f"{indent}comparison: {c.decision}: {c.phrase}; {c.rounds} rounds{dropped}{busy}"]
    if reason and (not c.stable or c.decision == "inconclusive"):
        out.append(f"{indent}{c.reason}")
    return out
