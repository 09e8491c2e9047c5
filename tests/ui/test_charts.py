"""The SVG charts: labels come from teammates (writer names, refusal reasons)."""

from __future__ import annotations

import re

from sealmem.client.ui.charts import stacked_bars


def _titles(svg: str) -> list[str]:
    return re.findall(r"<rect [^>]*><title>([^<]*)</title></rect>", svg)


def test_a_writer_named_others_keeps_its_own_bar() -> None:
    counts = {"others": 5, **{f"w{i}": 1 for i in range(8)}}
    svg = str(stacked_bars("memories per week", [("2026-W01", counts)]))
    titles = _titles(svg)
    assert "2026-W01: others 5" in titles
    assert "2026-W01: 2 others 2" in titles  # the two smallest writers together
    drawn = sum(int(t.rsplit(" ", 1)[1]) for t in titles)
    assert drawn == sum(counts.values())


def test_hostile_labels_stay_text_inside_the_svg() -> None:
    hostile = '</title></svg><script>alert(1)</script>"\u202e<a href="javascript:x">'
    svg = str(stacked_bars(hostile, [(hostile, {hostile: 3, "bad-signature": 1})]))
    assert "<script" not in svg
    assert "</svg>" not in svg[:-6]
    assert "javascript:x" not in svg.replace("href=&quot;javascript:x", "")
    assert "\u202e" not in svg
    assert "\\u202e" in svg
    assert svg.count("<title>") == 3  # the chart's and one per bar, none planted
