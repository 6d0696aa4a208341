"""The summary: per-model results and money, shown when the campaign ends (or on `s`), with the
leaderboard and the fairness verdict of `benchtui report`, computed by the same function
(`benchtui.report.build`) from the run dir, off the event loop."""

from __future__ import annotations

import asyncio
from pathlib import Path

from rich.cells import cell_len
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import DataTable, Label, Static

from benchtui.core.errors import BenchtuiError
from benchtui.core.money import fmt
from benchtui.engine import events as ev
from benchtui.engine.account import ModelAccount
from benchtui.report import CampaignReport, build
from benchtui.report.text import COLUMNS as REPORT_COLUMNS
from benchtui.report.text import leaderboard_row, legend_lines
from benchtui.ui.model import ViewModel
from benchtui.ui.widgets import clock_text

COLUMNS = ("model", "done", "certs", "skipped", "errors", "killed", "spent", "wasted", "cap")
# The report's leaderboard cells the money table above does not already show (wall times vary
# from run to run: `benchtui report` has them).
LEADERBOARD = (
    "#",
    "model",
    "ran/planned",
    "bug rules",
    "bug rate [95% CI]",
    "not hunting",
    "certs c/cl/r/o/i/u",
    "$/bug",
)
SHOWN = [REPORT_COLUMNS.index(c) for c in LEADERBOARD]
DROPPED_FIRST = {
    "summary-table": ("wasted", "cap", "killed"),
    "leaderboard-table": ("$/bug", "ran/planned", "not hunting"),
}
"""Columns left out, in this order, when a table is wider than the dialog (no horizontal
scrolling, no cut header): what the report and the money panel show as well."""
MAX_PAIRS = 3
LEGEND = "\n".join(legend_lines(LEADERBOARD[2:]))
"""What the leaderboard's columns mean, as the report says it (`benchtui report`)."""


def widths(header: tuple[str, ...], rows: list[tuple[str, ...]]) -> list[int]:
    """Each column's widest cell, header included, in terminal cells."""
    return [max([cell_len(header[i]), *(cell_len(r[i]) for r in rows)]) for i in range(len(header))]


def fitting(header: tuple[str, ...], wide: list[int], dropped: tuple[str, ...], width: int) -> list[int]:
    """The columns of a DataTable that fit `width` cells (each is its widest cell, `wide`, plus a
    space either side), leaving out those `dropped` names, in order, until they do."""
    shown = list(range(len(header)))
    need = [w + 2 for w in wide]
    for name in dropped:
        if sum(need[i] for i in shown) <= width:
            break
        shown.remove(header.index(name))
    return shown


TRY_KEYS_S = 20.0
"""A campaign that finished sooner left no time to try the keys (the README's fair.toml: seconds)."""


class SummaryScreen(ModalScreen[None]):
    BINDINGS = [
        Binding("escape,s", "dismiss", "Back", id="summary_close"),
        Binding("q", "app.quit", "Quit", id="summary_quit"),
    ]

    def __init__(self, view: ViewModel) -> None:
        super().__init__()
        self.view = view
        self.report: CampaignReport | None = None

    def compose(self) -> ComposeResult:
        view = self.view
        self.rows: dict[str, tuple[tuple[str, ...], list[tuple[str, ...]]]] = {
            "summary-table": (COLUMNS, self._money_rows(view.accounts)),
            "leaderboard-table": (LEADERBOARD, []),
        }
        """Each table's header and rows, whole: `fill` shows the columns that fit."""
        with VerticalScroll(id="dialog", classes="summary"):
            yield Label(
                f"Campaign {view.campaign}: {view.state} after {clock_text(view.elapsed)}", id="title"
            )
            for name in self.rows:
                yield DataTable[str](id=name, cursor_type="none", zebra_stripes=True)
            yield Static(LEGEND, id="legend", markup=False)  # "[95% CI]" is text, not a tag
            reading = "Leaderboard: reading the run dir…" if view.run_dir else ""
            yield Static(reading, id="fairness", markup=False)  # model names and paths may hold "[…]"
            yield Static(self._footnote(view), id="hint", markup=False)

    def on_resize(self) -> None:
        self.fill()

    def fill(self) -> None:
        """Both tables with the columns that fit the dialog's width (DROPPED_FIRST)."""
        tables = {table.id: table for table in self.query(DataTable)}
        if set(self.rows) - set(tables):  # not all mounted yet (seen under load): after the refresh
            self.call_after_refresh(self.fill)
            return
        width = self.query_one("#dialog").content_size.width
        for name, (header, rows) in self.rows.items():
            wide = widths(header, rows)
            shown = fitting(header, wide, DROPPED_FIRST[name], width or 10_000)
            table = tables[name]
            table.clear(columns=True)
            for i in shown:  # sized here: a table drawn before its next idle shows no cut cell
                table.add_column(header[i], width=wide[i])
            for row in rows:
                table.add_row(*(row[i] for i in shown))

    def on_mount(self) -> None:
        self.fill()
        if self.view.run_dir:
            self.run_worker(self._load_report(Path(self.view.run_dir)), exclusive=True, exit_on_error=False)

    async def _load_report(self, run_dir: Path) -> None:
        try:
            report = await asyncio.to_thread(build, [run_dir])  # reads the journal: not on the loop
        except (BenchtuiError, OSError) as exc:  # e.g. the run dir was moved: the summary stays up
            self.query_one("#fairness", Static).update(f"Leaderboard unavailable: {exc}")
            return
        self.show_report(report)

    def show_report(self, report: CampaignReport) -> None:
        """The numbers and the verdict `benchtui report` gives for this run dir."""
        rows = []
        for n, model in enumerate(report.models):
            cells = leaderboard_row(report.rank(n), model)
            rows.append(tuple(cells[i] for i in SHOWN))
        self.rows["leaderboard-table"] = (LEADERBOARD, rows)
        self.fill()
        lines = [
            f"{c.a} vs {c.b}: {'n/a' if c.p_adjusted is None else f'p = {c.p_adjusted:.2g} (Holm)'}, "
            f"{'separable' if c.separable else 'the data cannot separate them'}"
            for c in report.comparisons[:MAX_PAIRS]
        ]
        if len(report.comparisons) > MAX_PAIRS:
            lines.append(f"… {len(report.comparisons) - MAX_PAIRS} more pairs: `benchtui report`")
        lines += [f"{m.model}: {m.logical.endings()}" for m in report.models if m.logical is not None]
        lines.append(f"Fairness: {report.fairness.verdict}")
        lines += [f"  - {finding}" for finding in report.fairness.findings]
        lines += [f"  note: {note}" for note in report.fairness.notes]
        self.query_one("#fairness", Static).update("\n".join(lines))
        self.report = report

    def _money_rows(self, acc: ev.AccountsCommitted | None) -> list[tuple[str, ...]]:
        if acc is None:
            return []
        rows = [self._row(m) for m in acc.models]
        rows.append(
            (
                "total",
                *(
                    str(sum(getattr(m, a) for m in acc.models))
                    for a in ("done", "certificates", "skipped", "errors", "killed")
                ),
                fmt(acc.spent_usd),
                fmt(acc.wasted_usd),
                fmt(acc.budget_usd),
            )
        )
        return rows

    @staticmethod
    def _footnote(view: ViewModel) -> str:
        where = f"Results: {view.run_dir}/results/. " if view.run_dir else ""
        if view.ended is not None and not view.ended.finished:
            return where + "Not every session ran: `benchtui --no-ui --resume` continues."
        tried = ""
        if view.elapsed < TRY_KEYS_S:  # fair.toml is over in seconds: say where the keys can be tried
            tried = (
                " Over too soon to try pause (p), kill (k), q and --resume? "
                "`benchtui campaigns/play.toml` runs for minutes."
            )
        return where + "Esc: back to the sessions. q: quit." + tried

    @staticmethod
    def _row(m: ModelAccount) -> tuple[str, ...]:
        return (
            m.name,
            f"{m.done}/{m.planned}",
            str(m.certificates),
            str(m.skipped),
            str(m.errors),
            str(m.killed),
            fmt(m.spent_usd),
            fmt(m.wasted_usd),
            fmt(m.cap_usd),
        )
