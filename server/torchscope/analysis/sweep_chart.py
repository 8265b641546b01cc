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

from .formatting import format_duration
from .sweep import COMPUTE_SHARE_CROSSOVER, SweepPoint

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


def sweep_svg(points: list[SweepPoint], cross: Optional[int], title: str, name: str = "N") -> str:
    """The chart; points that failed are left out (the table says why)."""
    ok = sorted((p for p in points if p.ok), key=lambda p: p.n)
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    sizes = [p.n for p in ok] or [1]
    lo, hi = math.log(max(1, min(sizes))), math.log(max(1, max(sizes)))
    span = hi - lo or 1.0
    pad = 0.06 * plot_w

    def x(n: float) -> float:
        return LEFT + pad + (math.log(max(n, 1)) - lo) / span * (plot_w - 2 * pad)

    def y_share(share: float) -> float:
        return TOP + (1 - share) * plot_h

    times = [p.median_us for p in ok if p.median_us and p.median_us > 0]
    t_lo, t_hi = (min(times), max(times)) if times else (1.0, 10.0)
    t_ticks = _log_ticks(t_lo, t_hi)
    tl, th = math.log10(t_ticks[0]) if t_ticks else 0.0, math.log10(t_ticks[-1]) if t_ticks else 1.0
    t_span = th - tl or 1.0

    def y_time(us: float) -> float:
        return TOP + (1 - (math.log10(us) - tl) / t_span) * plot_h

    out = [
        '<?xml version="1.0" encoding="UTF-8"?>',
        f'<svg xmlns="http://www.w3.org/2000/svg" version="1.1" width="{WIDTH}" '
        f'height="{HEIGHT}" viewBox="0 0 {WIDTH} {HEIGHT}" font-family="sans-serif" '
        'font-size="12">',
        f"<title>{escape(title)}</title>",
        f'<rect x="0" y="0" width="{WIDTH}" height="{HEIGHT}" fill="#ffffff"/>',
        f'<text x="{WIDTH / 2:.1f}" y="22" text-anchor="middle" font-size="14" '
        f'font-weight="bold">{escape(title)}</text>',
    ]
    # Axes and the share grid.
    for share in (0.0, 0.25, 0.5, 0.75, 1.0):
        yy = y_share(share)
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
        f'<text x="{WIDTH - RIGHT - 6}" y="{y_share(COMPUTE_SHARE_CROSSOVER) - 6:.1f}" '
        'text-anchor="end" fill="#777777">compute-bound ↑ · overhead-bound ↓</text>'
    )
    out.append(
        f'<text transform="translate(16 {TOP + plot_h / 2:.1f}) rotate(-90)" '
        'text-anchor="middle">compute share of a call</text>'
    )
    for t in t_ticks:
        yy = y_time(t)
        out.append(
            f'<text x="{WIDTH - RIGHT + 8}" y="{yy + 4:.1f}" fill="{TIME_COLOUR}">'
            f"{escape(format_duration(t))}</text>"
        )
    out.append(
        f'<text transform="translate({WIDTH - 12} {TOP + plot_h / 2:.1f}) rotate(90)" '
        f'text-anchor="middle" fill="{TIME_COLOUR}">time per call (log)</text>'
    )
    out.append(
        f'<line x1="{LEFT}" y1="{TOP + plot_h}" x2="{WIDTH - RIGHT}" y2="{TOP + plot_h}" '
        'stroke="#333333"/>'
    )
    for p in ok:
        xx = x(p.n)
        out.append(f'<text x="{xx:.1f}" y="{TOP + plot_h + 18}" text-anchor="middle">{p.n}</text>')
    out.append(
        f'<text x="{LEFT + plot_w / 2:.1f}" y="{HEIGHT - 12}" text-anchor="middle">'
        f"{escape(name)} (log scale)</text>"
    )
    # Crossover marker: between the last overhead-bound size and the crossover size.
    if cross is not None:
        before = [p.n for p in ok if p.n < cross]
        at = math.sqrt(before[-1] * cross) if before else float(cross)
        xx = x(at)
        out.append(
            f'<line class="crossover" x1="{xx:.1f}" y1="{TOP}" x2="{xx:.1f}" '
            f'y2="{TOP + plot_h}" stroke="#c0392b" stroke-dasharray="4 3"/>'
        )
        out.append(
            f'<text x="{xx + 4:.1f}" y="{TOP + 14}" fill="#c0392b">'
            f"crossover: compute-bound from {escape(name)}={cross}</text>"
        )
    # Time per call (right axis).
    timed = [p for p in ok if p.median_us and p.median_us > 0]
    if len(timed) > 1:
        path = " ".join(f"{x(p.n):.1f},{y_time(p.median_us or 1):.1f}" for p in timed)
        out.append(
            f'<polyline class="time" points="{path}" fill="none" stroke="{TIME_COLOUR}" '
            'stroke-dasharray="3 3"/>'
        )
    for p in timed:
        xx, yy = x(p.n), y_time(p.median_us or 1)
        out.append(
            f'<rect class="time-point" x="{xx - 3:.1f}" y="{yy - 3:.1f}" width="6" height="6" '
            f'fill="{TIME_COLOUR}"><title>{p.n}: {escape(format_duration(p.median_us or 0))} '
            "per call</title></rect>"
        )
    # Compute share (left axis): one point per size.
    if len(ok) > 1:
        path = " ".join(f"{x(p.n):.1f},{y_share(p.compute_share or 0):.1f}" for p in ok)
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
        out.append(
            f'<circle class="point" data-n="{p.n}" data-share="{share:.4f}" '
            f'data-verdict={quoteattr(p.verdict)} cx="{x(p.n):.1f}" cy="{y_share(share):.1f}" '
            f'r="5" fill="{colour}" stroke="#222222"><title>{escape(label)}</title></circle>'
        )
    # Legend.
    lx, ly = LEFT + 6, TOP - 12
    for k, (label, colour) in enumerate(
        [*VERDICT_COLOURS.items(), ("other verdict", OTHER_COLOUR)]
    ):
        out.append(
            f'<circle cx="{lx + k * 130:.1f}" cy="{ly}" r="4" fill="{colour}"/>'
            f'<text x="{lx + 8 + k * 130:.1f}" y="{ly + 4}">{escape(label)}</text>'
        )
    out.append("</svg>")
    return "\n".join(out) + "\n"
