"""Every page of the viewer, by path: the one source of the server's answers and the export's files.

`Viewer.page(path)` renders the page at a root-relative path (`sessions/<id>/attempt-1.html`), or
None when no page has that path. Reading is blocking (the server calls it in a worker thread);
each run is re-read only when its journal or ledger moved (`RunStory.changed`).
"""

from __future__ import annotations

import hashlib
from importlib import resources
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from benchtui.core import counters
from benchtui.core.money import ZERO
from benchtui.engine.campaign import slug
from benchtui.report import CampaignReport
from benchtui.report import html as report_html
from benchtui.report.text import COLUMNS, leaderboard_row, ranked_by_note
from benchtui.story.session import stamp as session_stamp
from benchtui.view import session_pages
from benchtui.view.render import REPORT_CSP, Renderer, environment
from benchtui.view.runs import Page, RunContext, RunView
from benchtui.view.site import STATIC, folders, link, route

LIVE_MS = 2000
"""How often an open page of a running campaign asks whether it changed (a stat on the server)."""
SESSIONS_SHOWN = 5000
"""Rows of the sessions page (a model's page lists all of its own)."""
STATES = ("pending", "running", "done", "skipped_budget", "error", "killed")


class Viewer:
    def __init__(self, paths: list[Path], *, export: bool = False) -> None:
        self.runs = [RunView(path, folder) for path, folder in zip(paths, folders(paths), strict=True)]
        self.export = export
        self.render = Renderer(environment())

    def page(self, path: str) -> Page | None:
        if path.startswith("static/") and path.removeprefix("static/") in STATIC:
            return static(path.removeprefix("static/"))
        if len(self.runs) > 1 and path in ("", "index.html"):
            return self._html("runs.html", "index.html", runs=[r.summary() for r in self.runs], run=None)
        path = path or "index.html"
        for run in self.runs:
            folder = run.site.folder
            if folder and not path.startswith(folder + "/"):
                continue
            found = route(path.removeprefix(folder + "/") if folder else path)
            if found is None:
                return None
            return self._run_page(run, path, found.kind, found.parts)
        return None

    def etag(self, path: str) -> str:
        """A tag that changes whenever the page at `path` could ("" when unknown): the run's
        journal and ledger, whether it runs, and for a session's pages its files."""
        for run in self.runs:
            folder = run.site.folder
            if folder and not path.startswith(folder + "/"):
                continue
            found = route(path.removeprefix(folder + "/") if folder else path or "index.html")
            if found is None:
                return ""
            story = run.story
            parts: list[Any] = [path, story.stamp, story.running]
            if found.kind not in ("campaign", "report", "sessions", "model") and story.session(
                found.parts[0]
            ):
                parts.append(session_stamp(run.path, found.parts[0]))
            return '"' + hashlib.sha256(repr(parts).encode()).hexdigest()[:32] + '"'
        return ""

    def live(self, run: RunView | None) -> int:
        return LIVE_MS if not self.export and run is not None and run.story.running else 0

    def _html(self, template: str, here: str, *, csp: str = "", **context: Any) -> Page:
        run = context.get("run")
        where = ", ".join(str(r.path) for r in self.runs)
        body = self.render.page(
            template, here, live=self.live(run.view if run else None), where=where, **context
        )
        return Page(body.encode(), "text/html; charset=utf-8")

    def _run_page(self, run: RunView, here: str, kind: str, parts: tuple[str, ...]) -> Page | None:
        context = RunContext(run)
        if kind == "campaign":
            return self._html("campaign.html", here, run=context, **self._campaign(run))
        if kind == "report":
            return self._report(run, here)
        if kind in ("sessions", "model"):
            return self._sessions(run, here, context, parts[0] if parts else None)
        return session_pages.page(self._html, self.export, run, context, here, kind, parts)

    def _campaign(self, run: RunView) -> dict[str, Any]:
        story = run.story
        campaign, ledger = story.campaign, story.ledger
        report, error = run.report()
        totals = ledger.models.values()
        budget = {
            "total": ledger.budget_usd,
            "spent": ledger.spent_usd,
            "reserved": sum((m.reserved_usd for m in totals), ZERO),
            "wasted": sum((m.wasted_usd for m in totals), ZERO),
            "enforce": ledger.enforce,
            "per_session": campaign.per_session_usd,
        }
        limits = campaign.logical_limits
        return {
            "budget": budget,
            "limits": counters.line(counters.usage({}, limits)).replace(" 0/", " ") if limits else "",
            "models": story.models(),
            "report": report,
            "report_error": error,
            "leaderboard": leaderboard(report),
            "matrix": self._matrix(run, report),
        }

    def _matrix(self, run: RunView, report: CampaignReport | None) -> dict[str, Any] | None:
        if report is None or not report.matrix:
            return None
        models, tasks = list(report.matrix["cells"]), report.matrix["tasks"]
        return {
            "models": models,
            "rows": [
                {
                    "task": task,
                    "cells": [
                        {
                            "label": report.matrix["cells"][m][i] or "did not run",
                            "href": cell_link(run, m, task),
                        }
                        for m in models
                    ],
                }
                for i, task in enumerate(tasks)
            ],
        }

    def _report(self, run: RunView, here: str) -> Page:
        report, error = run.report()
        if report is None:
            return self._html("problem.html", here, run=RunContext(run), problem=error)
        links = report_html.Links(
            model=lambda m: link(here, run.site.model(m)),
            cell=lambda m, task: relative(here, cell_link(run, m, task)),
        )
        body = report_html.render(report, links)
        meta = REPORT_CSP.removesuffix("; frame-ancestors 'none'")
        banner = self.render.page("banner.html", here, run=RunContext(run), csp=meta)
        head, _, rest = banner.partition("<!--body-->")
        body = body.replace('<meta charset="utf-8">', head, 1).replace("<body>", "<body>" + rest, 1)
        return Page(body.encode(), "text/html; charset=utf-8", REPORT_CSP)

    def _sessions(self, run: RunView, here: str, context: RunContext, model_slug: str | None) -> Page | None:
        story = run.story
        models = story.models()
        chosen = None
        if model_slug is not None:
            chosen = next((m for m in models if slug(m.model.name) == model_slug), None)
            if chosen is None:
                return None
        rows = chosen.rows if chosen is not None else story.sessions
        report, _ = run.report()
        board = leaderboard(report)
        row = next((r for r in board["rows"] if chosen and r["model"] == chosen.model.name), None)
        return self._html(
            "sessions.html",
            here,
            run=context,
            title=f"model {chosen.model.name}" if chosen else f"sessions of {story.campaign.name}",
            model=chosen,
            leaderboard=board,
            row=row,
            rows=rows if chosen else rows[:SESSIONS_SHOWN],
            more=0 if chosen else max(0, len(rows) - SESSIONS_SHOWN),
            model_names=[m.model.name for m in models],
            states=STATES,
        )


def leaderboard(report: CampaignReport | None) -> dict[str, Any]:
    rows = (
        [{"model": m.model, "cells": leaderboard_row(report.rank(n), m)} for n, m in enumerate(report.models)]
        if report
        else []
    )
    return {
        "header": COLUMNS,
        "rows": rows,
        "model_column": COLUMNS.index("model"),
        "note": ranked_by_note(report) if report else "",
    }


def cell_link(run: RunView, model: str, task: str) -> str:
    """A task × model cell: its one session, or the sessions page filtered to it."""
    found = run.story.cells().get((model, task), [])
    if len(found) == 1:
        return run.site.session(found[0])
    return run.site.sessions() + "?" + urlencode({"model": model, "task": task})


def relative(here: str, target: str) -> str:
    path, _, query = target.partition("?")
    return link(here, path) + (f"?{query}" if query else "")


def static(name: str) -> Page:
    data = resources.files("benchtui.view").joinpath(f"static/{name}").read_bytes()
    kind = "text/css" if name.endswith(".css") else "text/javascript"
    return Page(data, f"{kind}; charset=utf-8")
