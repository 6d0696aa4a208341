"""The summary: per-model results and money, shown when the campaign ends (or on `s`), with the
leaderboard and the fairness verdict of `benchtui report`, computed by the same function
(`benchtui.report.build`) from the run dir, off the event loop."""

from __future__ import annotations

import asyncio
from pathlib import Path

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import DataTable, Label, Static

from benchtui.core.errors import BenchtuiError
from benchtui.core.money import fmt
from benchtui.engine import events as ev
from benchtui.engine.account import ModelAccount
from benchtui.report import CampaignReport, build
from benchtui.report.text import COLUMNS as REPORT_COLUMNS
from benchtui.report.text import leaderboard_row
from benchtui.ui.model import ViewModel
from benchtui.ui.widgets import clock_text

COLUMNS = ("model", "done", "certs", "skipped", "errors", "killed", "spent", "wasted", "cap")
# The report's leaderboard cells the money table above does not already show (wall times vary
# from run to run: `benchtui report` has them).
LEADERBOARD = ("#", "model", "ran/planned", "bugs", "bug rate [95% CI]", "certs c/cl/r/o/i/u", "$/bug")
SHOWN = [REPORT_COLUMNS.index(c) for c in LEADERBOARD]
MAX_PAIRS = 3


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
        with Vertical(id="dialog", classes="summary"):
            yield Label(
                f"Campaign {view.campaign}: {view.state} after {clock_text(view.elapsed)}", id="title"
            )
            yield self._table(view.accounts)
            leaderboard: DataTable[str] = DataTable(
                id="leaderboard-table", cursor_type="none", zebra_stripes=True
            )
            leaderboard.add_columns(*LEADERBOARD)
            yield leaderboard
            yield Static("Leaderboard: reading the run dir…" if view.run_dir else "", id="fairness")
            yield Static(self._footnote(view), id="hint")

    def on_mount(self) -> None:
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
        table = self.query_one("#leaderboard-table", DataTable)
        table.clear()
        for n, model in enumerate(report.models):
            cells = leaderboard_row(report.rank(n), model)
            table.add_row(*(cells[i] for i in SHOWN))
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
        self.query_one("#fairness", Static).update("\n".join(lines))
        self.report = report

    def _table(self, acc: ev.AccountsCommitted | None) -> DataTable[str]:
        table: DataTable[str] = DataTable(id="summary-table", cursor_type="none", zebra_stripes=True)
        table.add_columns(*COLUMNS)
        if acc is not None:
            for m in acc.models:
                table.add_row(*self._row(m))
            table.add_row(
                "total",
                *(
                    str(sum(getattr(m, a) for m in acc.models))
                    for a in ("done", "certificates", "skipped", "errors", "killed")
                ),
                fmt(acc.spent_usd),
                fmt(acc.wasted_usd),
                fmt(acc.budget_usd),
            )
        return table

    @staticmethod
    def _footnote(view: ViewModel) -> str:
        where = f"Results: {view.run_dir}/results/. " if view.run_dir else ""
        if view.ended is not None and not view.ended.finished:
            return where + "Not every session ran: `benchtui --no-ui --resume` continues."
        return where + "Esc: back to the sessions. q: quit."

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
