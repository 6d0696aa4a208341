"""The UI's view model and cost bars, without a terminal."""

from __future__ import annotations

from decimal import Decimal as D

from benchtui.core.contract import LogicalLimits
from benchtui.core.counters import line
from benchtui.engine import events as ev
from benchtui.engine.plan import PlannedSession
from benchtui.engine.records import JournalRecord
from benchtui.ui.model import LOG_LINES, ViewModel
from benchtui.ui.widgets import bar_cells, cost_bar

PLAN = [PlannedSession(f"m-{i:04d}", "m", i, None) for i in range(3)]


def model(journal=None) -> ViewModel:
    return ViewModel("c", "fake", 2, PLAN, journal or {}, clock=lambda: 0.0)


def test_bars_show_spent_and_reserved_parts_of_the_cap():
    assert bar_cells(D("0.5"), D("0.25"), D(1), 20) == (10, 5)
    assert bar_cells(D(1), D(0), D(1), 20) == (20, 0)
    assert bar_cells(D(0), D("0.001"), D(1), 20) == (0, 1)  # a reservation is never invisible
    assert bar_cells(D("0.9"), D("0.5"), D(1), 10) == (9, 1)  # clipped to the bar
    assert cost_bar(D(2), D(0), D(1), 5).plain == "█████"  # over the cap (enforce = false): all red


def test_events_fold_into_states_counts_and_a_bounded_log():
    view = model()
    view.apply(ev.SessionStarted(session="m-0000", model="m", index=0, task=None, attempt=1, runner="fake"))
    view.apply(ev.SessionProgress(session="m-0000", note="reading the rules", calls=1, cost_usd=D("0.01")))
    assert (view.states["pending"], view.states["running"]) == (2, 1)  # counts kept up to date
    assert view.sessions["m-0000"].notes[-1] == "reading the rules"
    view.apply(
        ev.SessionEnded(
            session="m-0000",
            model="m",
            index=0,
            attempt=1,
            state="done",
            result="bug_found",
            reason="",
            cost_usd=D("0.02"),
            certificate=True,
        )
    )
    view.apply(ev.ControlChanged(paused=True, stopping=False, runner="alt", parallelism=3))
    assert (view.states["running"], view.states["done"], view.state, view.runner) == (0, 1, "paused", "alt")
    changes = view.take_changes()
    assert changes.sessions == {"m-0000"} and changes.header
    assert [line[6:] for line in changes.log] == [
        "start m-0000 (attempt 1, runner fake)",
        "end   m-0000 done bug_found $0.0200",
        "control: paused, runner alt, parallelism 3",
    ]
    assert view.take_changes().sessions == set()  # taken once
    for _ in range(LOG_LINES + 10):
        view.apply(ev.Notice(level="info", message="x"))
    assert len(view.log) == LOG_LINES
    view.apply(ev.CampaignEnded(finished=False, message="stopped"))
    assert view.state == "stopped"


def test_a_resumed_run_starts_from_its_journal():
    view = model(
        {
            "m-0001": JournalRecord.from_json(
                {
                    "session": "m-0001",
                    "model": "m",
                    "index": 1,
                    "state": "killed",
                    "attempt": 1,
                    "runner": "fake",
                    "cost_usd": 0.03,
                    "reason": "killed by the user",
                }
            )
        }
    )
    assert view.sessions["m-0001"].state == "killed" and view.sessions["m-0001"].cost == D("0.03")
    assert view.states["pending"] == 2 and view.states["killed"] == 1


LIMITS = LogicalLimits(model_calls=10, shell_actions=12, submits=2, tools=(("pred", 24), ("pred solve", 10)))


def test_the_logical_budget_of_a_session_follows_its_events_and_its_journal():
    # A resumed run: the end line the engine wrote (through JournalRecord, as the engine does).
    end_line = JournalRecord(
        "m-0001",
        "m",
        1,
        None,
        "done",
        1,
        "fake",
        counters={"model_calls": 10, "shell_actions": 4, "submits": 1, "tools": {"pred": 3}},
        exhausted=("model_calls",),
    )
    journal = {"m-0001": JournalRecord.from_json(end_line.to_json())}
    view = ViewModel("c", "fake", 2, PLAN, journal, lambda: 0.0, limits=LIMITS)
    resumed = view.sessions["m-0001"]
    assert line(resumed.counters, resumed.exhausted) == (
        "calls 10/10  actions 4/12  pred 3/24  pred solve 0/10  submits 1/2  (spent: calls)"
    )
    view.apply(ev.SessionStarted(session="m-0000", model="m", index=0, task=None, attempt=1, runner="fake"))
    running = view.sessions["m-0000"]
    assert line(running.counters) == "calls 0/10  actions 0/12  pred 0/24  pred solve 0/10  submits 0/2"
    progress = (("model_calls", 3, 10), ("shell_actions", 5, 12), ("submits", 0, 2), ("tools.pred", 7, 24))
    view.apply(ev.SessionProgress(session="m-0000", calls=3, counters=progress))
    assert line(running.counters) == "calls 3/10  actions 5/12  pred 7/24  submits 0/2"
    ended = {"model_calls": 4, "shell_actions": 12, "submits": 0, "tools": {"pred": 9, "pred solve": 2}}
    view.apply(
        ev.SessionEnded(
            session="m-0000",
            model="m",
            index=0,
            attempt=1,
            state="done",
            result="no_certificate",
            reason="",
            cost_usd=D("0.02"),
            counters=ended,
            exhausted=("shell_actions",),
        )
    )
    assert line(running.counters, running.exhausted) == (
        "calls 4/10  actions 12/12  pred 9/24  pred solve 2/10  submits 0/2  (spent: actions)"
    )


def test_sessions_of_campaigns_without_logical_budgets_have_no_counters():
    view = model()
    view.apply(ev.SessionStarted(session="m-0000", model="m", index=0, task=None, attempt=1, runner="fake"))
    view.apply(ev.SessionProgress(session="m-0000", calls=1))
    assert view.sessions["m-0000"].counters == ()


# -- a certificate's mark: ✓ only where a verifier confirmed it -----------------------------------
def _ended(view: ViewModel, result: str) -> str:
    from benchtui.ui.sessions import outcome_text

    view.apply(ev.SessionStarted(session="m-0000", model="m", index=0, task=None, attempt=1, runner="fake"))
    view.apply(
        ev.SessionEnded(
            session="m-0000", model="m", index=0, attempt=1, state="done", result=result, reason="",
            cost_usd=D("0.03"), certificate=True,
        )
    )  # fmt: skip
    return outcome_text(view.sessions["m-0000"])


def test_a_runners_own_claim_never_reads_as_verified():
    assert _ended(model(), "bug_found") == "bug_found ◇ cert"  # fake: no verifier judged it


def test_a_verified_certificate_reads_with_a_tick_and_a_rejected_one_without():
    verifying = frozenset({"fake"})  # as if the profile's kind ran the target's verifier
    confirmed = ViewModel("c", "fake", 2, PLAN, {}, clock=lambda: 0.0, verifying=verifying)
    assert _ended(confirmed, "bug_found") == "bug_found ✓ cert"
    rejected = ViewModel("c", "fake", 2, PLAN, {}, clock=lambda: 0.0, verifying=verifying)
    assert _ended(rejected, "rejected") == "rejected cert"


def test_only_profiles_that_run_a_verifying_target_verify(tmp_path):
    from support import write_campaign

    from benchtui.engine.campaign.loading import load
    from benchtui.ui.app import verifying_profiles

    fake = load(write_campaign(tmp_path, name="f"))
    assert verifying_profiles(fake) == frozenset()
