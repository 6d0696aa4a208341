"""The summary: per-model results and money, shown when the campaign ends (or on `s`)."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import DataTable, Label, Static

from benchtui import events as ev
from benchtui.money import fmt
from benchtui.ui.model import ViewModel
from benchtui.ui.widgets import clock_text

COLUMNS = ("model", "done", "certs", "skipped", "errors", "killed", "spent", "wasted", "cap")


class SummaryScreen(ModalScreen[None]):
    BINDINGS = [
        Binding("escape,s", "dismiss", "Back", id="summary_close"),
        Binding("q", "app.quit", "Quit", id="summary_quit"),
    ]

    def __init__(self, view: ViewModel) -> None:
        super().__init__()
        self.view = view

    def compose(self) -> ComposeResult:
        view = self.view
        with Vertical(id="dialog"):
            yield Label(
                f"Campaign {view.campaign}: {view.state} after {clock_text(view.elapsed)}", id="title"
            )
            yield self._table(view.accounts)
            yield Static(self._footnote(view), id="hint")

    def _table(self, acc: ev.AccountsCommitted | None) -> DataTable:
        table = DataTable(id="summary-table", cursor_type="none", zebra_stripes=True)
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
    def _row(m: ev.ModelTotals) -> tuple[str, ...]:
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
