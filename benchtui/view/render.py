"""Templates with autoescape: everything a run holds reaches a page as text, never as markup.

Jinja2 escapes every value by default (`<script>` arrives as `&lt;script&gt;`); the `v` filter
first makes control and bidi characters visible (`benchtui.story.text.visible`). No page has an
inline script, and no script is built from run data: the one script is `static/view.js`, the same
for every run; a Content-Security-Policy (a header when served, a `<meta>` on disk) lets nothing
else run and nothing load from any other origin.
"""

from __future__ import annotations

import json
import time
from decimal import Decimal, InvalidOperation
from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined

from benchtui.core.money import fmt
from benchtui.story.text import head, visible
from benchtui.view.site import link

CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
    "base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
META_CSP = CSP.removesuffix("; frame-ancestors 'none'")
"""A page's own copy (a `<meta>` cannot say frame-ancestors: the header does)."""
REPORT_CSP = CSP.replace("style-src 'self'", "style-src 'self' 'unsafe-inline'")
"""The report page keeps its inline CSS and matplotlib's SVG style attributes (no script: the
report has none; what it shows of a run is escaped by `html.escape`)."""
VERDICTS = ("accepted", "rejected", "off_task", "inconclusive", "unverified", "refused", "admitted")
"""Verdicts with a colour of their own (another word is shown, uncoloured)."""
LIMIT = 20_000
"""Characters of one message shown on a timeline (the rest: its own page, paged)."""


def environment() -> Environment:
    env = Environment(
        loader=PackageLoader("benchtui.view", "templates"),
        autoescape=True,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(v=_visible, usd=usd, when=when, cut=cut, compact=compact, pretty=pretty)
    env.globals.update(head=head, LIMIT=LIMIT, VERDICTS=VERDICTS)
    return env


class Renderer:
    """Renders a page at `here` (its root-relative path): its links are made relative to it."""

    def __init__(self, env: Environment, home: str = "index.html") -> None:
        self.env = env
        self.home = home

    def page(self, template: str, here: str, *, csp: str = META_CSP, live: int = 0, **context: Any) -> str:
        def to(target: str) -> str:
            path, _, query = target.partition("?")
            return link(here, path) + (f"?{query}" if query else "")

        return self.env.get_template(template).render(
            to=to,
            static=lambda name: link(here, f"static/{name}"),
            home=self.home,
            csp=csp,
            live=live,
            **context,
        )


def _visible(value: Any) -> str:
    return visible(value if isinstance(value, str) else "" if value is None else str(value))


def usd(value: Any) -> str:
    if value is None or value == "":
        return "-"
    try:
        return fmt(value if isinstance(value, Decimal) else Decimal(str(value)))
    except (InvalidOperation, ValueError):
        return _visible(value)


def when(t: Any) -> str:
    if not isinstance(t, int | float) or not 0 < t < 10**11:
        return "-"
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(t))


def cut(value: Any, limit: int) -> str:
    text = value if isinstance(value, str) else str(value)
    return text if len(text) <= limit else f"{text[:limit]}… ({len(text) - limit:,} more characters)"


def compact(value: Any) -> str:
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False, default=str)
    except (ValueError, RecursionError):
        return repr(value)


def pretty(value: Any) -> str:
    try:
        return json.dumps(value, indent=1, ensure_ascii=False, default=str)
    except (ValueError, RecursionError):
        return repr(value)
