"""A runner's milestones (`Meter.progress(note, milestone=True)`: a whole run's phase or episode)
take the one progress path every front end reads: the headless output prints them as lines (and
the TUI's event pane, the same `describe`), `ctl status` shows each running session's last one;
plain notes (a step, a worker started) stay out of both."""

from __future__ import annotations

from types import SimpleNamespace

from benchtui.cli.ctl import show_status
from benchtui.engine import events as ev
from benchtui.engine.control import Controller


def scheduler(running: list[str]) -> SimpleNamespace:
    return SimpleNamespace(
        campaign=SimpleNamespace(name="top50"),
        state="running",
        runner="top50",
        parallelism=2,
        running_sessions=lambda: set(running),
        accounts=SimpleNamespace(journal={}),
    )


def test_a_milestone_is_a_headless_line_and_a_plain_note_is_not():
    milestone = ev.SessionProgress(session="m-0000", note="episode 7/50, 2 accepted", milestone=True)
    assert ev.describe(milestone) == "      m-0000 episode 7/50, 2 accepted"
    assert ev.describe(ev.SessionProgress(session="m-0000", note="worker 12 started")) is None
    assert ev.describe(ev.SessionProgress(session="m-0000", note="", milestone=True)) is None


def test_ctl_status_shows_each_running_sessions_last_milestone_and_forgets_ended_ones():
    controller = Controller(scheduler(["a-0000", "b-0000"]))  # type: ignore[arg-type]
    for note in ("triage", "episode 2/50, 0 accepted"):
        controller.listen(ev.SessionProgress(session="a-0000", note=note, milestone=True))
    controller.listen(ev.SessionProgress(session="b-0000", note="a plain note"))
    controller.listen(ev.SessionProgress(session="c-0000", note="triage", milestone=True))
    controller.listen(
        ev.SessionEnded(
            session="c-0000", model="m", index=0, attempt=1, state="done", result=None, reason="", cost_usd=0
        )
    )
    reply = controller.answer({"cmd": "status"})
    assert reply["progress"] == {"a-0000": "episode 2/50, 0 accepted"}
    shown = show_status(reply)
    assert "progress:\n  a-0000  episode 2/50, 0 accepted" in shown
