"""The size sweep as an SVG chart: compute share per size, and where it crosses 50 %.

Self-contained SVG 1.1 (no scripts, no external references, inline styles only), so it opens in
a browser, embeds in a VS Code webview under a strict Content-Security-Policy, and parses as
XML. x is the size on a log scale; the left axis is the compute share (0-100 %) with each size
as one ``<circle class="point">`` coloured by its verdict; the right axis is the unprofiled time
per call on a log scale (a dashed line with small squares); a dashed vertical line marks the
crossover.
"""

from __future__ import annotations

import math
from typing import Optional
from xml.sax.saxutils import escape, quoteattr

from torchscope.analysis import COMPUTE_SHARE_CROSSOVER, SweepPoint
from torchscope.analysis.formatting import format_duration

WIDTH, HEIGHT = 720, 400
LEFT, RIGHT, TOP, BOTTOM = 64, 72, 48, 56

VERDICT_COLOURS = {
    "overhead-bound": "#d9822b",
    "compute-bound": "#2e8b57",
}
OTHER_COLOUR = "#6a6aa8"
TIME_COLOUR = "#4a78c0"


def _log_ticks(lo: float, hi: float) -> list[float]:
    """Powers of ten covering [lo, hi] (at least the two ends)."""
    if lo <= 0 or hi <= 0:
        return []
    first, last = math.floor(math.log10(lo)), math.ceil(math.log10(hi))
    return [10.0**e for e in range(first, last + 1)]


class _Frame:
    """Where a size, a share and a time per call go on the canvas."""

    def __init__(self, ok: list[SweepPoint]) -> None:
        self.plot_w, self.plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
        sizes = [p.n for p in ok] or [1]
        self.lo, hi = math.log(max(1, min(sizes))), math.log(max(1, max(sizes)))
        self.span = hi - self.lo or 1.0
        self.pad = 0.06 * self.plot_w
        times = [p.median_us for p in ok if p.median_us and p.median_us > 0]
        t_lo, t_hi = (min(times), max(times)) if times else (1.0, 10.0)
        self.t_ticks = _log_ticks(t_lo, t_hi)
        ticks = self.t_ticks
        self.tl = math.log10(ticks[0]) if ticks else 0.0
        th = math.log10(ticks[-1]) if ticks else 1.0
        self.t_span = th - self.tl or 1.0

    def x(self, n: float) -> float:
        return (
            LEFT
            + self.pad
            + (math.log(max(n, 1)) - self.lo) / self.span * (self.plot_w - 2 * self.pad)
        )

    def y_share(self, share: float) -> float:
        return TOP + (1 - share) * self.plot_h

    def y_time(self, us: float) -> float:
        return TOP + (1 - (math.log10(us) - self.tl) / self.t_span) * self.plot_h


def _head(title: str) -> list[str]:
    return [
        '<?xml version="1.0" encoding="UTF-8"?>',
        f'<svg xmlns="http://www.w3.org/2000/svg" version="1.1" width="{WIDTH}" '
        f'height="{HEIGHT}" viewBox="0 0 {WIDTH} {HEIGHT}" font-family="sans-serif" '
        'font-size="12">',
        f"<title>{escape(title)}</title>",
        f'<rect x="0" y="0" width="{WIDTH}" height="{HEIGHT}" fill="#ffffff"/>',
        f'<text x="{WIDTH / 2:.1f}" y="22" text-anchor="middle" font-size="14" '
        f'font-weight="bold">{escape(title)}</text>',
    ]


def _share_axis(f: _Frame) -> list[str]:
    """The left axis and the share grid, the 50 % line dashed."""
    out = []
    for share in (0.0, 0.25, 0.5, 0.75, 1.0):
        yy = f.y_share(share)
        dash = ' stroke-dasharray="6 4"' if share == COMPUTE_SHARE_CROSSOVER else ""
        colour = "#999999" if share == COMPUTE_SHARE_CROSSOVER else "#e4e4e4"
        out.append(
            f'<line x1="{LEFT}" y1="{yy:.1f}" x2="{WIDTH - RIGHT}" y2="{yy:.1f}" '
            f'stroke="{colour}"{dash}/>'
        )
        out.append(
            f'<text x="{LEFT - 8}" y="{yy + 4:.1f}" text-anchor="end">{share * 100:.0f} %</text>'
        )
    out.append(
        f'<text x="{WIDTH - RIGHT - 6}" y="{f.y_share(COMPUTE_SHARE_CROSSOVER) - 6:.1f}" '
        'text-anchor="end" fill="#777777">compute-bound ↑ · overhead-bound ↓</text>'
    )
    out.append(
        f'<text transform="translate(16 {TOP + f.plot_h / 2:.1f}) rotate(-90)" '
        'text-anchor="middle">compute share of a call</text>'
    )
    return out


def _time_and_size_axes(f: _Frame, ok: list[SweepPoint], name: str) -> list[str]:
    """The right axis (time per call, log) and the x axis (the sizes)."""
    out = []
    for t in f.t_ticks:
        yy = f.y_time(t)
        out.append(
            f'<text x="{WIDTH - RIGHT + 8}" y="{yy + 4:.1f}" fill="{TIME_COLOUR}">'
            f"{escape(format_duration(t))}</text>"
        )
    out.append(
        f'<text transform="translate({WIDTH - 12} {TOP + f.plot_h / 2:.1f}) rotate(90)" '
        f'text-anchor="middle" fill="{TIME_COLOUR}">time per call (log)</text>'
    )
    bottom = TOP + f.plot_h
    out.append(
        f'<line x1="{LEFT}" y1="{bottom}" x2="{WIDTH - RIGHT}" y2="{bottom}" stroke="#333333"/>'
    )
    for p in ok:
        out.append(f'<text x="{f.x(p.n):.1f}" y="{bottom + 18}" text-anchor="middle">{p.n}</text>')
    out.append(
        f'<text x="{LEFT + f.plot_w / 2:.1f}" y="{HEIGHT - 12}" text-anchor="middle">'
        f"{escape(name)} (log scale)</text>"
    )
    return out


def _crossover(f: _Frame, ok: list[SweepPoint], cross: Optional[int], name: str) -> list[str]:
    """A marker between the last overhead-bound size and the crossover size."""
    if cross is None:
        return []
    before = [p.n for p in ok if p.n < cross]
    verdict = next((p.verdict for p in ok if p.n == cross), "compute-bound")
    xx = f.x(math.sqrt(before[-1] * cross) if before else float(cross))
    return [
        f'<line class="crossover" x1="{xx:.1f}" y1="{TOP}" x2="{xx:.1f}" '
        f'y2="{TOP + f.plot_h}" stroke="#c0392b" stroke-dasharray="4 3"/>',
        f'<text x="{xx + 4:.1f}" y="{TOP + 14}" fill="#c0392b">'
        f"crossover: {escape(verdict)} from {escape(name)}={cross}</text>",
    ]


def _time_series(f: _Frame, ok: list[SweepPoint]) -> list[str]:
    """Time per call (right axis): a dashed line with small squares."""
    out = []
    timed = [p for p in ok if p.median_us and p.median_us > 0]
    if len(timed) > 1:
        path = " ".join(f"{f.x(p.n):.1f},{f.y_time(p.median_us or 1):.1f}" for p in timed)
        out.append(
            f'<polyline class="time" points="{path}" fill="none" stroke="{TIME_COLOUR}" '
            'stroke-dasharray="3 3"/>'
        )
    for p in timed:
        xx, yy = f.x(p.n), f.y_time(p.median_us or 1)
        out.append(
            f'<rect class="time-point" x="{xx - 3:.1f}" y="{yy - 3:.1f}" width="6" height="6" '
            f'fill="{TIME_COLOUR}"><title>{p.n}: {escape(format_duration(p.median_us or 0))} '
            "per call</title></rect>"
        )
    return out


def _share_series(f: _Frame, ok: list[SweepPoint], name: str) -> list[str]:
    """Compute share (left axis): one point per size, coloured by its verdict."""
    out = []
    if len(ok) > 1:
        path = " ".join(f"{f.x(p.n):.1f},{f.y_share(p.compute_share or 0):.1f}" for p in ok)
        out.append(
            f'<polyline class="share" points="{path}" fill="none" stroke="#333333" '
            'stroke-width="1.5"/>'
        )
    for p in ok:
        share = p.compute_share or 0.0
        colour = VERDICT_COLOURS.get(p.verdict, OTHER_COLOUR)
        label = (
            f"{name}={p.n}: {share * 100:.0f} % compute, "
            f"{format_duration(p.median_us or 0)} per call, {p.verdict}"
        )
        # An unstable row (issue 54): a dashed red ring and its reason; not in the crossover.
        unstable = "" if p.stable else ' data-unstable="true" stroke-dasharray="2 2"'
        stroke = "#222222" if p.stable else "#c0392b"
        if not p.stable:
            label += f" — {p.unstable_reason or 'unstable'}"
        out.append(
            f'<circle class="point" data-n="{p.n}" data-share="{share:.4f}" '
            f'data-verdict={quoteattr(p.verdict)} cx="{f.x(p.n):.1f}" '
            f'cy="{f.y_share(share):.1f}" '
            f'r="5" fill="{colour}" stroke="{stroke}"{unstable}>'
            f"<title>{escape(label)}</title></circle>"
        )
    return out


def _legend() -> list[str]:
    lx, ly = LEFT + 6, TOP - 12
    return [
        f'<circle cx="{lx + k * 130:.1f}" cy="{ly}" r="4" fill="{colour}"/>'
        f'<text x="{lx + 8 + k * 130:.1f}" y="{ly + 4}">{escape(label)}</text>'
        for k, (label, colour) in enumerate(
            [*VERDICT_COLOURS.items(), ("other verdict", OTHER_COLOUR)]
        )
    ]


def sweep_svg(points: list[SweepPoint], cross: Optional[int], title: str, name: str = "N") -> str:
    """The chart; points that failed are left out (the table says why)."""
    ok = sorted((p for p in points if p.ok), key=lambda p: p.n)
    frame = _Frame(ok)
    out = _head(title) + _share_axis(frame) + _time_and_size_axes(frame, ok, name)
    out += _crossover(frame, ok, cross, name) + _time_series(frame, ok)
    out += _share_series(frame, ok, name) + _legend() + ["</svg>"]
    return "\n".join(out) + "\n"
