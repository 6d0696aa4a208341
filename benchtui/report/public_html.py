"""The public board as one self-contained page: inline CSS, no script, no request at view time (a
content security policy forbids any), the board's JSON embedded as data, so the guard can check
that the page is exactly what that JSON renders (report/public_guard.py: a hand edit is refused).

The page's own words avoid the answer key's field names: the guard refuses them anywhere.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from html import escape
from typing import Any

from benchtui.report.public import Board, ModelRow

DATA_OPEN = '<script type="application/json" id="board">'
DATA_CLOSE = "</script>"

STYLE = """
body { font: 15px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: #1d2430;
       max-width: 1400px; margin: 2rem auto; padding: 0 1rem; }
h1 { font-size: 1.6rem; margin-bottom: .2rem; } h2 { margin-top: 2rem; border-bottom: 1px solid #d5dbe3; }
.meta, .small { color: #5a6472; } .small { font-size: .9rem; }
table { border-collapse: collapse; width: 100%; margin: .6rem 0; }
th, td { padding: .35rem .6rem; text-align: left; border-bottom: 1px solid #e4e8ee; vertical-align: top; }
th { background: #f1f4f8; } tbody tr:nth-child(even) { background: #fafbfd; }
td { overflow-wrap: break-word; } .scroll { overflow-x: auto; } .scroll table { width: auto; min-width: 100%; }
.verdict { display: inline-block; padding: .3rem .8rem; border-radius: 1rem; font-weight: 600; }
.fair { background: #e3f4e8; color: #1b6b34; } .unfair { background: #fde7e6; color: #a32018; }
"""
CSP = "default-src 'none'; style-src 'unsafe-inline'"

COLUMNS = (
    "#", "model", "trials", "bugs", "bug rate [95% CI]", "bugs@K", "accepted 1st / 2nd", "tool calls per bug",
    "cap hits", "spent", "tokens", "library commit", "programs", "runner", "benchtui", "dates",
)  # fmt: skip
UNBROKEN = ("model", "bug rate [95% CI]")
"""Columns whose cells never wrap (a model name broken at its `-` reads as two)."""
STYLE += ", ".join(f"td:nth-child({COLUMNS.index(c) + 1})" for c in UNBROKEN) + " { white-space: nowrap; }\n"


def data_text(board: Board) -> str:
    """The board's JSON as the page embeds it (no `<`, `>` or `&`: it cannot close its element)."""
    text = json.dumps(board.model_dump(mode="json"), sort_keys=True, ensure_ascii=True, allow_nan=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def embedded(page: str) -> str | None:
    """The board JSON a page embeds (None: it embeds none)."""
    start = page.find(DATA_OPEN)
    end = page.find(DATA_CLOSE, start + len(DATA_OPEN)) if start >= 0 else -1
    return page[start + len(DATA_OPEN) : end] if end >= 0 else None


def _rate(row: ModelRow) -> str:
    r = row.bug_rate
    if r.value is None or r.ci95 is None:
        return "-"
    return f"{r.value:.0%} [{r.ci95[0]:.0%}, {r.ci95[1]:.0%}] ({r.hits}/{r.trials})"


def _cells(row: ModelRow) -> tuple[str, ...]:
    hits = row.cap_hits
    claimed = "" if row.judged_by == "verifier" else " claimed"
    return (
        str(row.rank),
        row.model,
        str(row.trials),
        f"{row.bugs}{claimed}",
        _rate(row),
        ", ".join(f"{k} {n}" for k, n in row.bugs_at.items()) if row.bugs_at else "-",
        f"{row.first_attempt_accepts} / {row.second_attempt_accepts}{claimed}",
        ", ".join(f"{c} {'-' if v is None else f'{v:g}'}" for c, v in row.tool_calls_per_bug.items()) or "-",
        f"{hits.skipped_budget} skipped, {hits.ended_by_a_counter} by a counter"
        + "".join(f" ({c} {n})" for c, n in hits.by_counter.items()),
        f"${row.spent_usd:.4f}",
        f"{row.tokens:,}" + _cached(row.tokens_by_bucket),
        ", ".join(c[:12] for c in row.library_commits) or "-",
        "; ".join(f"{n}: {', '.join(v)}" for n, v in row.programs.items()) or "-",
        ", ".join(row.runners) or "-",
        ", ".join(row.benchtui),
        f"{row.dates.first} to {row.dates.last}" if row.dates else "-",
    )


def render(board: Board) -> str:
    head = "".join(f"<th>{escape(c)}</th>" for c in COLUMNS)
    body = "".join(
        "<tr>" + "".join(f"<td>{escape(c)}</td>" for c in _cells(row)) + "</tr>" for row in board.models
    )
    fair = board.fairness
    verdict = (
        "fair: no finding"
        if fair.fair
        else f"UNFAIR: {fair.findings} finding(s) (the full report lists them)"
    )
    comparisons = "".join(
        f"<li><b>{escape(c.a)}</b> vs <b>{escape(c.b)}</b> [{escape(c.test)}]: "
        + ("no data" if c.p_adjusted is None else f"Holm-adjusted p = {c.p_adjusted:.2g}")
        + ("; the data separates them" if c.separable else "; the data cannot separate them")
        + "</li>"
        for c in board.comparisons
    )
    ranked = "verified distinct bugs" if board.ranked_by == "verified_bugs" else "bugs claimed by the runner"
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="{CSP}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>benchtui public board</title><style>{STYLE}</style></head>
<body>
<h1>Public board</h1>
<p class="meta">benchtui {escape(board.benchtui)} &middot; ranked by {ranked}</p>
<p><span class="verdict {"fair" if fair.fair else "unfair"}">{escape(verdict)}</span></p>
<div class="scroll"><table id="board-table"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>
<p class="small">Aggregates only: every run of a model counts (its trials pooled, never its best run).
bug rate: sessions with a bug / trials, with its 95% Wilson interval; bugs@K: bugs among the first K
of a shortlist; accepted 1st / 2nd: sessions whose first (second) submission was confirmed (claimed,
where the runner has no verifier); cap hits:
sessions skipped for money, and sessions a logical limit stopped.</p>
<h2>Is the difference real?</h2>
<ul id="comparisons">{comparisons or "<li>one model: nothing to compare</li>"}</ul>
{DATA_OPEN}{data_text(board)}{DATA_CLOSE}
</body></html>
"""


def _cached(buckets: Mapping[Any, int]) -> str:
    """` (9,000 cached)` where some of the prompt tokens were read from the provider's cache."""
    return f" ({buckets['cache_read']:,} cached)" if buckets.get("cache_read") else ""
