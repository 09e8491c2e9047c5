"""Small server-rendered SVG charts (no script, no inline style: the CSP allows neither).

Every label is escaped here; the result is markup the templates insert as is.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from html import escape

from markupsafe import Markup

from ..textsafe import visible

__all__ = ["PALETTE", "stacked_bars"]

PALETTE = ("#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#9c755f")
_W, _H, _PAD, _LEGEND = 640, 180, 28, 18
SERIES = 7


def _text(value: str) -> str:
    return escape(visible(value), quote=True)


def stacked_bars(title: str, columns: Sequence[tuple[str, Mapping[str, int]]]) -> Markup:
    """Stacked bars: one column per label, one colour per series (the largest
    :data:`SERIES` series; the rest together as "others")."""
    totals: dict[str, int] = {}
    for _, counts in columns:
        for name, n in counts.items():
            totals[name] = totals.get(name, 0) + n
    ranked = sorted(totals, key=lambda name: (-totals[name], name))
    kept = ranked[:SERIES]
    rest = ranked[SERIES:]
    # The rest is keyed None: a writer may well be named "others".
    series: list[str | None] = [*kept, *([None] if rest else [])]
    shown = {name: name for name in kept} | {None: f"{len(rest)} others"}
    colour = {name: PALETTE[i % len(PALETTE)] for i, name in enumerate(series)}
    peak = max((sum(c.values()) for _, c in columns), default=0)
    legend_rows = (len(series) + 3) // 4
    height = _H + _PAD + legend_rows * _LEGEND
    out = [
        f'<svg class="chart" viewBox="0 0 {_W} {height}" role="img" '
        f'aria-label="{_text(title)}" xmlns="http://www.w3.org/2000/svg">',
        f"<title>{_text(title)}</title>",
    ]
    if not columns or peak == 0:
        out.append(f'<text x="{_W // 2}" y="{_H // 2}" text-anchor="middle">nothing yet</text>')
        out.append("</svg>")
        return Markup("".join(out))  # noqa: S704 - every label above is escaped
    width = (_W - 2 * _PAD) / len(columns)
    for i, (label, counts) in enumerate(columns):
        x = _PAD + i * width
        y = float(_H)
        for key in series:
            n = counts.get(key, 0) if key is not None else sum(counts.get(k, 0) for k in rest)
            if not n:
                continue
            h = (_H - _PAD) * n / peak
            y -= h
            out.append(
                f'<rect x="{x + 1:.1f}" y="{y:.1f}" width="{max(width - 2, 1):.1f}" '
                f'height="{h:.1f}" fill="{colour[key]}"><title>{_text(label)}: '
                f"{_text(shown[key])} {n}</title></rect>"
            )
        if len(columns) <= 16 or i % max(1, len(columns) // 8) == 0:
            out.append(
                f'<text x="{x + width / 2:.1f}" y="{_H + 14}" text-anchor="middle" '
                f'class="tick">{_text(label)}</text>'
            )
    out.append(f'<text x="4" y="{_PAD - 8}" class="tick">max {peak}</text>')
    for j, key in enumerate(series):
        lx = _PAD + (j % 4) * 150
        ly = _H + _PAD + (j // 4) * _LEGEND
        out.append(f'<rect x="{lx}" y="{ly - 10}" width="10" height="10" fill="{colour[key]}"/>')
        out.append(f'<text x="{lx + 14}" y="{ly}" class="tick">{_text(shown[key][:24])}</text>')
    out.append("</svg>")
    return Markup("".join(out))  # noqa: S704 - every label above is escaped
