"""The detail pane: what the selected session is doing, and its certificate."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.text import Text
from textual.widgets import Static

from benchtui.core import counters
from benchtui.core.endings import MEANING
from benchtui.core.errors import BenchtuiError
from benchtui.core.money import fmt
from benchtui.core.outcome import OutcomeDetails
from benchtui.core.text import printable
from benchtui.engine.reader import RunDir
from benchtui.ui.model import SessionRow
from benchtui.ui.sessions import STATE_STYLES


def find_certificate(run_dir: Path, session: str, model: str) -> OutcomeDetails | None:
    """The latest result row of `session` (read in a worker thread), through the run dir's reader."""
    try:
        return RunDir(run_dir).latest_detail(session, model)
    except BenchtuiError:  # a file someone broke: the pane shows no details, the run goes on
        return None


class SessionDetail(Static):
    """What the selected session is doing: state, money, its latest progress notes, certificate.

    The selected session changes with every call it makes, so `show` runs on most redraws: it
    repaints only when the text changed, and asks for a layout (a reflow and repaint of the
    whole screen) only when the text's height did, for the pane's scrollbar.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._shown: tuple[Text, int] | None = None
        """What is on screen: the text (Rich compares its characters and styles), its height."""

    def show(self, view: SessionRow | None, row: OutcomeDetails | None = None) -> None:
        if view is None:
            self._update(Text("no session selected", style="dim"))
            return
        text = Text.assemble(
            (view.id, "bold"),
            f"   {view.model}   #{view.index}",
            f"   task {view.task}" if view.task else "",
            "\n",
            "state ",
            (view.state, STATE_STYLES.get(view.state, "")),
            f"   attempt {view.attempt}   runner {view.runner or '-'}\n",
            f"cost {fmt(view.cost)}   calls {view.calls}\n",
        )
        if view.counters:  # only campaigns with logical budgets have them
            text.append("budget ", style="bold")
            text.append(counters.line(view.counters, view.exhausted) + "\n")
        if view.ending:  # why it ended, by name (core/endings.py)
            text.append(f"ending {view.ending}: {MEANING.get(view.ending, '')}\n")  # type: ignore[call-overload]
        if view.state == "done":  # a model outcome; other ends say why (e.g. "killed by the user")
            text.append(
                f"outcome {view.outcome or '-'}" + (f" — {view.reason}" if view.reason else "") + "\n"
            )
        elif view.state not in ("pending", "running"):
            text.append(f"why {view.reason or view.state}\n")
        if view.certificate:
            text.append("certificate ", style="bold")
            text.append_text(self._certificate(row))
        if view.notes:
            text.append("progress\n", style="bold")
            for note in view.notes:
                text.append(f"  • {note}\n")
        self._update(text)

    def _update(self, text: Text) -> None:
        width = self.content_size.width
        height = len(text.wrap(self.app.console, width)) if width else -1
        if (text, height) != self._shown:
            layout = self._shown is None or self._shown[1] != height
            self._shown = text, height
            self.update(text, layout=layout)

    @staticmethod
    def _certificate(row: OutcomeDetails | None) -> Text:
        cert = row.certificate if row is not None else None
        if cert is None:
            return Text("yes (details in the outcomes of the run dir)\n")
        source = cert.get("source", {}).get("type", "?") if isinstance(cert.get("source"), dict) else "?"
        # The agent wrote the certificate (and the verifier's details quote pred about it).
        text = Text(printable(f"{cert.get('rule', '?')} on {source}"))
        if cert.get("violation"):
            text.append(printable(f": {cert['violation']}"))
        if row is not None and row.judgement is not None:
            v = row.judgement.verdict
            judged = f"{v.status} ({v.cause})" if v.judged_by == "verifier" else "claimed by the runner"
            # The reason quotes pred; a runner's own claim says what `judged` says already.
            said = printable(f"{judged}, {v.reason}" if v.reason and v.reason not in judged else judged)
            who = "verifier" if v.judged_by == "verifier" else "judged"
            text.append(f"\n  {who}: {said}", style="dim")
        return text + "\n"
