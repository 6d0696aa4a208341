"""The report as one self-contained HTML page: inline CSS and inline SVG plots, no script, no
network at view time (no CDN, no web font), so it can be mailed, archived or opened offline.

Rendered by the viewer (`benchtui view`, its export), it is given `Links`: each model, each
task × model cell and through it each session then links to the viewer's pages, by relative
links that work from disk as well as from the viewer's server."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from html import escape

from benchtui.core.endings import ENDINGS, MEANING
from benchtui.report import CampaignReport
from benchtui.report.logical import limits_line, table_rows
from benchtui.report.plots import all_plots
from benchtui.report.text import (
    COLUMNS,
    LEGEND,
    TESTS,
    audit_text,
    cache_prices,
    campaigns_text,
    counts,
    dates_text,
    leaderboard_row,
    prompt_text,
    ranked_by_note,
    usage_lines,
)

STYLE = """
body { font: 15px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: #1d2430;
       max-width: 1100px; margin: 2rem auto; padding: 0 1rem; }
h1 { font-size: 1.6rem; margin-bottom: .2rem; } h2 { margin-top: 2rem; border-bottom: 1px solid #d5dbe3; }
.meta { color: #5a6472; } table { border-collapse: collapse; width: 100%; margin: .6rem 0; }
th, td { padding: .35rem .6rem; text-align: left; border-bottom: 1px solid #e4e8ee; vertical-align: top; }
#leaderboard td, #audit td:first-child { white-space: nowrap; } #audit td { overflow-wrap: anywhere; }
th { background: #f1f4f8; } tbody tr:nth-child(even) { background: #fafbfd; }
.verdict { display: inline-block; padding: .3rem .8rem; border-radius: 1rem; font-weight: 600; }
.fair { background: #e3f4e8; color: #1b6b34; } .unfair { background: #fde7e6; color: #a32018; }
figure { margin: 1.2rem 0; } figcaption { font-weight: 600; margin-bottom: .3rem; }
figure svg { width: 100%; max-width: 760px; height: auto; } .note { color: #5a6472; font-size: .9rem; }
"""


@dataclass(frozen=True, slots=True)
class Links:
    """Where the viewer shows a model and a task × model cell (relative URLs, made by the viewer)."""

    model: Callable[[str], str]
    cell: Callable[[str, str], str]
    """(model, task): its session, or the sessions of that model and task."""


Href = Callable[[int, int], str | None]
"""(row, column) -> the cell's link, or None."""


def _table(
    header: tuple[str, ...], rows: Sequence[tuple[str, ...]], table_id: str, href: Href | None = None
) -> str:
    head = "".join(f"<th>{escape(h)}</th>" for h in header)
    body = "".join(
        "<tr>"
        + "".join(f"<td>{_cell(c, href(r, i) if href else None)}</td>" for i, c in enumerate(row))
        + "</tr>"
        for r, row in enumerate(rows)
    )
    return f'<table id="{table_id}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def _cell(text: str, link: str | None) -> str:
    return f'<a href="{escape(link)}">{escape(text)}</a>' if link else escape(text)


def _fairness(report: CampaignReport) -> str:
    audit = report.fairness
    verdict = (
        f'<p><span class="verdict {"fair" if audit.fair else "unfair"}">{escape(audit.verdict)}</span></p>'
    )
    findings = "".join(f"<li>{escape(f)}</li>" for f in audit.findings)
    findings += "".join(f'<li class="note">note: {escape(n)}</li>' for n in audit.notes)
    rows = [
        (
            a.model.name,
            counts(a.runners),
            counts(a.reservations, "$"),
            counts(a.environments),
            prompt_text(a),
            f"{a.skipped_budget}/{a.planned}",
            f"{a.infra_errors}/{a.planned}",
            f"${a.model.input_usd_per_mtok} / ${a.model.output_usd_per_mtok}{cache_prices(a.model)}",
            str(a.model.max_output_tokens),
            dates_text(a),
            *((audit_text(a.logical),) if a.logical is not None else ()),
        )
        for a in audit.models
    ]
    header = (
        "model",
        "runners",
        "reserved",
        "environments",
        "prompts",
        "skipped (budget)",
        "infra errors",
        "price in/out per Mtok",
        "max output tokens",
        "dates",
        *(("logical budgets",) if any(a.logical is not None for a in audit.models) else ()),
    )
    return (
        verdict + (f'<ul id="findings">{findings}</ul>' if findings else "") + _table(header, rows, "audit")
    )


def _logical(report: CampaignReport) -> str:
    models = [(m.model, m.logical) for m in report.models if m.logical is not None]
    if not models:
        return ""
    head, *rows = table_rows(models)
    return (
        f'<h2>Logical budgets</h2>\n<p class="meta">per session: {escape(limits_line([s for _, s in models]))}</p>'
        + _table(head, rows, "logical")
        + '<p class="note">per counter: the mean and max units used by the sessions that ran, and how many '
        "sessions its limit stopped; ended by counter: a limit refused the session a unit; ended by "
        "submit: it ended with a certificate and no limit refused it anything.</p>\n"
    )


def _endings(report: CampaignReport) -> str:
    """Why each model's sessions ended: a column per ending that occurred, with its meaning."""
    shown = [e for e in ENDINGS if any(m.endings[e] for m in report.models)]
    if not shown:
        return ""
    rows = [
        (m.model, *(str(m.endings[e]) for e in shown), str(m.not_hunting), str(m.could_not_act))
        for m in report.models
    ]
    meanings = "".join(f"<li><b>{escape(e)}</b>: {escape(MEANING[e])}</li>" for e in shown)
    return (
        '<h2>Endings</h2>\n<p class="note">Why each session that ran ended (its last attempt).</p>'
        + _table(("model", *shown, "not hunting", "could not act"), rows, "endings")
        + f'<ul class="note" id="ending-meanings">{meanings}</ul>\n'
    )


def _usage(report: CampaignReport) -> str:
    """Tokens by bucket, as they were priced (nothing for runs written before buckets)."""
    lines = usage_lines(report)
    if not lines:
        return ""
    items = "".join(f"<li>{escape(line.strip())}</li>" for line in lines[2:])
    return f'<h2>Tokens by bucket</h2>\n<p class="note">{escape(lines[1])}</p>\n<ul>{items}</ul>\n'


def render(report: CampaignReport, links: Links | None = None) -> str:
    campaign = campaigns_text(report)
    runs = ", ".join(str(run.path) for run in report.runs)
    model_column = COLUMNS.index("model")
    leaderboard = _table(
        COLUMNS,
        [leaderboard_row(report.rank(n), m) for n, m in enumerate(report.models)],
        "leaderboard",
        (lambda r, c: links.model(report.models[r].model) if c == model_column else None) if links else None,
    )
    matrix = ""
    if report.matrix:
        models = list(report.matrix["cells"])
        tasks = report.matrix["tasks"]
        matrix = "<h2>Task × model</h2>\n" + _table(
            ("task", *models),
            [
                (task, *(report.matrix["cells"][m][i] or "did not run" for m in models))
                for i, task in enumerate(tasks)
            ],
            "matrix",
            (lambda r, c: links.cell(models[c - 1], tasks[r]) if c else None) if links else None,
        )
    comparisons = "".join(
        f"<li><b>{escape(c.a)}</b> vs <b>{escape(c.b)}</b>: "
        f"[{escape(TESTS.get(c.test, c.test))}] "
        f"{'n/a' if c.difference is None else f'{c.difference * 100:+.0f} pp'}; {escape(c.verdict)}</li>"
        for c in report.comparisons
    )
    legend = "".join(f"<li><b>{escape(c)}</b>: {escape(LEGEND[c])}</li>" for c in COLUMNS)
    figures = "".join(
        f'<figure id="{fid}"><figcaption>{escape(caption)}</figcaption>{svg}</figure>'
        for fid, caption, svg in all_plots(report)
    )
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>benchtui report: {escape(campaign)}</title><style>{STYLE}</style></head>
<body>
<h1>{escape(campaign)}</h1>
<p class="meta">identity {escape(report.identity)} &middot; runs: {escape(runs)}</p>
<h2>Leaderboard</h2>
{leaderboard}
<p class="note">{escape(ranked_by_note(report))}.</p>
<ul class="note" id="legend">{legend}</ul>
{_endings(report)}{_usage(report)}{_logical(report)}{matrix}<h2>Is the difference real?</h2>
<p class="note">Exact McNemar test on the task pairs where both models ran the same tasks, Fisher's exact
test otherwise (two-sided); p-values Holm-adjusted over all pairs.</p>
<ul id="comparisons">{comparisons or "<li>one model: nothing to compare</li>"}</ul>
<h2>Fairness audit</h2>
{_fairness(report)}
<h2>Plots</h2>
{figures}
</body></html>
"""
