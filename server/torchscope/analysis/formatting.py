"""Number formatting shared by headlines, findings and the terminal report.

One function so that "2.3 ms" means the same thing in the editor, the CLI and the tests.
"""

from __future__ import annotations

import math


def format_duration(us: float) -> str:
    """Format a duration given in microseconds with 2-3 significant digits.

    ``23 µs``, ``2.7 µs``, ``2.3 ms``, ``147 ms``, ``1.20 s``, ``29.9 s``. The unit changes
    where the rounded value would reach 1000 of the smaller unit, so 999.7 µs is ``1.0 ms``.
    """
    if not math.isfinite(us):
        return "n/a"
    if us < 0:
        return "-" + format_duration(-us)
    if round(us, 1) < 10:
        return f"{us:.1f} µs"
    if round(us) < 1000:
        return f"{us:.0f} µs"
    ms = us / 1000.0
    if round(ms, 1) < 100:
        return f"{ms:.1f} ms"
    if round(ms) < 1000:
        return f"{ms:.0f} ms"
    s = ms / 1000.0
    if round(s, 2) < 10:
        return f"{s:.2f} s"
    if round(s, 1) < 100:
        return f"{s:.1f} s"
    return f"{s:.0f} s"


def format_share(share: float) -> str:
    """A fraction as a whole percentage with the French-style space the headlines use."""
    if not math.isfinite(share):
        return "n/a"
    return f"{share * 100:.0f} %"


def format_bytes(n: float) -> str:
    """Bytes in binary units: ``704 B``, ``18.4 MiB``."""
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(value) < 1024 or unit == "GiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} GiB"  # pragma: no cover - loop always returns


def format_change(ratio: float) -> str:
    """How much slower (ratio > 1) or faster: ``3.4×`` from 1.5 on, ``12 %`` below."""
    big = ratio if ratio >= 1 else 1 / ratio
    return f"{big:.1f}×" if big >= 1.5 else f"{(big - 1) * 100:.0f} %"


def format_change_interval(ratio: float, near: float, far: float) -> str:
    """``near``–``far`` in the unit :func:`format_change` gives ``ratio``: ``1.5×–1.7×`` for
    a 1.6× change whose interval starts at 1.494 (each end in its own unit read ``49 %–1.7×``),
    ``8 %–15 %`` for a 12 % one."""

    def big(value: float) -> float:
        return value if value >= 1 else 1 / value

    if big(ratio) >= 1.5:
        return f"{big(near):.1f}×–{big(far):.1f}×"
    return f"{(big(near) - 1) * 100:.0f} %–{(big(far) - 1) * 100:.0f} %"


def _times(value: float, digits: int = 2) -> str:
    if not math.isfinite(value):
        return "n/a"
    return f"{value:.{digits}f}×" if value < 9.995 else f"{value:.1f}×"


def ratio_phrase(ratio: float, low: float, high: float, directed: bool = True) -> str:
    """B / A per call and its interval, in one direction and one pair of parentheses: the one
    phrase builder of every comparison (``analysis/multi/ab.py``).

    ``2.3× slower (1.1×–3.3× slower)`` when all of the interval is at or above 1,
    ``1.24× faster (1.13×–1.32× faster)`` when all of it is at or below 1 (the speed-up, A / B;
    two decimals below 1.5×, one from there), else ``0.95× the time (0.80×–1.10×)``: an
    interval reaching both sides of 1 has no direction, so the words give none (never
    "slower" beside an interval on the faster side);
    nor do they when not ``directed`` (a comparison that decided no direction). An interval of
    one point (no rounds) is left out: ``3.4× slower``.
    """
    if not (math.isfinite(ratio) and ratio > 0 and low > 0):
        return f"{_times(ratio)} the time"
    if low == high:
        word = "slower" if ratio > 1 else "faster"
        big = ratio if ratio > 1 else 1 / ratio
        return (
            f"{_times(big, 1 if big >= 1.5 else 2)} {word}"
            if directed
            else f"{_times(ratio)} the time"
        )
    d = 1 if max(ratio, 1 / ratio) >= 1.5 else 2
    if directed and low >= 1 and ratio >= 1:
        return f"{_times(ratio, d)} slower ({_times(low, d)}–{_times(high, d)} slower)"
    if directed and high <= 1 and ratio <= 1:
        fast = (1 / ratio, 1 / high, 1 / low)
        return f"{_times(fast[0], d)} faster ({_times(fast[1], d)}–{_times(fast[2], d)} faster)"
    return f"{_times(ratio)} the time ({_times(low)}–{_times(high)})"
