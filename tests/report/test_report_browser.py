"""The HTML report in a real browser: headless Chromium, every network request failing, renders
the leaderboard, the audit and three plots (a screenshot that is not blank, the DOM it built)."""

from __future__ import annotations

import re

from support.real_parts import require
from support.report import run_campaign

from benchtui.report import build
from benchtui.report.browser import dump_dom, find_chromium, screenshot
from benchtui.report.html import render

PLOT_IDS = ("plot-bug-rate", "plot-spend", "plot-bugs-vs-spend")


def dark_share(png, box=None) -> float:
    """The share of pixels that are not (near) white, in `box` (left, top, right, bottom)."""
    from PIL import Image

    with Image.open(png) as image:
        grey = image.convert("L")
        if box:
            grey = grey.crop(box)
        histogram = grey.histogram()
    return sum(histogram[:235]) / sum(histogram)


def test_html_report_opens_offline_in_headless_chromium(tmp_path):
    require("headless Chromium", find_chromium(), "install Debian's `chromium` (.ci/run does)")
    run_dir = run_campaign(tmp_path, bugs={"fake/model-a": [0, 2, 3], "fake/model-b": [4]})
    page = tmp_path / "report.html"
    page.write_text(render(build([run_dir])))
    source = page.read_text()
    # Self-contained: nothing the browser would fetch (no script, stylesheet link, image, or URL
    # other than the SVGs' own `url(#clip)` references).
    assert not re.search(r"<script|<link|<img|@import|url\((?!#)", source, re.IGNORECASE)
    assert not re.search(r"""(src|href)\s*=\s*["']?\s*(https?:)?//""", source, re.IGNORECASE)

    dom = dump_dom(page)
    leaderboard = dom[dom.index('id="leaderboard"') : dom.index("</table>", dom.index('id="leaderboard"'))]
    assert "fake/model-a" in leaderboard and "fake/model-b" in leaderboard
    assert "43% [16%, 75%]" in leaderboard  # model A: 3 of 7 sessions, its Wilson interval
    assert 'id="audit"' in dom and "fair: no finding" in dom
    for plot in PLOT_IDS:
        figure = dom[dom.index(f'id="{plot}"') :]
        assert figure.index("<svg") < figure.index("</figure>"), f"{plot} has no SVG"

    png = screenshot(page, tmp_path / "report.png", size=(1200, 2600))
    assert dark_share(png) > 0.02, "the page rendered blank"
    width, height = 1200, 2600
    # The plots sit in the page's lower half: drawn axes and curves, not an empty area.
    assert dark_share(png, (0, height // 2, width, height)) > 0.01
