"""The scheduler's control calls and its handling of misbehaving runners, in-process under Trio."""

from __future__ import annotations

from decimal import Decimal

import pytest
import trio
import trio.testing
from support import Recorder, journal, last_states, ledger, start, write_campaign

from benchtui.engine import events as ev
from benchtui.engine import run as engine


def prepare(tmp_path, **kw) -> engine.PreparedRun:
    path = write_campaign(tmp_path, **kw)
    return engine.prepare(engine.Options(path, tmp_path / "runs"))


def in_call(rec: Recorder) -> int:
    """Sessions whose (fake) call was authorised: they are asleep in it until the clock moves."""
    return sum(1 for p in rec.of(ev.SessionProgress) if p.calls == 1 and p.cost_usd == 0)


def running(rec: Recorder) -> int:
    return len(rec.of(ev.SessionStarted)) - sum(e.state != "skipped_budget" for e in rec.of(ev.SessionEnded))


# Time in these tests is a MockClock: frozen (sessions sleeping their latency stay running)
# until a test jumps it or lets it autojump, so what runs when is decided by the test, not by
# the machine's load. Waits are on events (Recorder.until), never polling.


@pytest.mark.trio
async def test_pause_stops_launching_and_resume_continues(tmp_path, mock_clock):
    prep = prepare(tmp_path, sessions=4, total="10", latency=1, parallelism=2)
    rec = Recorder()
    async with trio.open_nursery() as nursery:
        scheduler, result = await start(prep, nursery, rec)
        await rec.until(lambda: in_call(rec) == 2)
        scheduler.pause()
        mock_clock.jump(1)  # the two running sessions finish
        await rec.until(lambda: running(rec) == 0)  # their ends are on disk, the pause before them
        mock_clock.jump(60)
        await trio.testing.wait_all_tasks_blocked()
        assert len(rec.of(ev.SessionStarted)) == 2  # running ones finished, none launched
        assert ledger(prep.run_dir)["paused"] is True
        scheduler.resume()
        mock_clock.autojump_threshold = 0
    assert result["finished"] is True
    assert len(rec.of(ev.SessionStarted)) == 8


@pytest.mark.trio
async def test_kill_ends_the_session_killed_with_its_spend_kept(tmp_path, mock_clock):
    prep = prepare(tmp_path, sessions=2, total="10", latency=5, parallelism=4)
    rec = Recorder()
    async with trio.open_nursery() as nursery:
        scheduler, result = await start(prep, nursery, rec)
        # Each fake session authorises its call, then sleeps in it (the clock is frozen).
        await rec.until(lambda: in_call(rec) == 4)
        assert scheduler.kill("fake_model-a-0000") is True
        assert scheduler.kill("no-such-session") is False
        await rec.until(lambda: rec.of(ev.SessionEnded))
        scheduler.stop(now=True)
    assert result["finished"] is False
    last = last_states(prep.run_dir)
    assert last["fake_model-a-0000"]["state"] == "killed"
    assert last["fake_model-a-0000"]["cost_usd"] == 0.03  # the authorised call is charged
    interrupted = [r for s, r in last.items() if s != "fake_model-a-0000"]
    assert all(r["state"] == "error" and r["retryable"] for r in interrupted)
    doc = ledger(prep.run_dir)
    assert Decimal(repr(doc["totals"]["wasted_usd"])) == Decimal("0.12")
    assert doc["running"] == {}


@pytest.mark.trio
async def test_stop_lets_running_sessions_finish(tmp_path, mock_clock):
    prep = prepare(tmp_path, sessions=5, total="10", latency=1, parallelism=2)
    rec = Recorder()
    async with trio.open_nursery() as nursery:
        scheduler, result = await start(prep, nursery, rec)
        await rec.until(lambda: len(rec.of(ev.SessionStarted)) == 2)
        scheduler.stop()
        mock_clock.autojump_threshold = 0
    assert result["finished"] is False
    states = [r["state"] for r in last_states(prep.run_dir).values()]
    assert states == ["done", "done"]


@pytest.mark.trio
async def test_set_runner_applies_to_sessions_not_yet_started_and_warns(tmp_path, mock_clock):
    prep = prepare(
        tmp_path,
        sessions=3,
        total="10",
        latency=1,
        parallelism=1,
        extra_runners='[runners.other]\nkind = "fake"\ncost_usd = 0.02\n',
    )
    rec = Recorder()
    async with trio.open_nursery() as nursery:
        scheduler, _ = await start(prep, nursery, rec)
        await rec.until(lambda: rec.of(ev.SessionStarted))
        with pytest.raises(ValueError, match="unknown runner profile"):
            scheduler.set_runner("nope")
        scheduler.set_runner("other")
        mock_clock.autojump_threshold = 0
    runners = [r["runner"] for r in journal(prep.run_dir) if r["state"] == "running"]
    assert runners[0] == "fake" and set(runners[1:]) == {"other"} and len(runners) == 6
    assert any("fairness" in n.message for n in rec.of(ev.Notice))
    assert ledger(prep.run_dir)["runner"] == "other"


@pytest.mark.trio
async def test_set_parallelism_changes_how_many_run_at_once(tmp_path, mock_clock):
    prep = prepare(tmp_path, sessions=10, total="10", latency=1, parallelism=1)
    rec = Recorder()
    async with trio.open_nursery() as nursery:
        scheduler, _ = await start(prep, nursery, rec)
        scheduler.set_parallelism(5)
        with pytest.raises(ValueError):
            scheduler.set_parallelism(0)
        await rec.until(lambda: in_call(rec) == 5)
        await trio.testing.wait_all_tasks_blocked()
        assert len(scheduler.running_sessions()) == 5  # and no more: the 6th waits for a slot
        scheduler.set_parallelism(2)
        mock_clock.jump(1)
        await rec.until(lambda: running(rec) == 2 and in_call(rec) == 7)
        await trio.testing.wait_all_tasks_blocked()
        assert len(scheduler.running_sessions()) == 2
        mock_clock.autojump_threshold = 0


@pytest.mark.trio
@pytest.mark.parametrize(
    ("kind", "reason", "retryable"),
    [
        ("Raising", "runner failed: RuntimeError: boom", True),
        ("Garbage", "runner returned garbage", True),
        ("Hanging", "wall-clock limit of 0.2 s reached", False),
    ],
)
async def test_misbehaving_runner_ends_as_error_and_the_campaign_goes_on(tmp_path, kind, reason, retryable):
    """Real time: the wall-clock limit is real time (0.2 s)."""
    write_campaign(
        tmp_path,
        sessions=4,
        total="10",
        latency=0,
        parallelism=2,
        extra_runners=f'[runners.stub]\nkind = "support.stub_runners:{kind}"\nwall_time_s = 0.2\n',
    )
    prep = engine.prepare(engine.Options(tmp_path / "t.toml", tmp_path / "runs", runner="stub"))
    async with trio.open_nursery() as nursery:
        _, result = await start(prep, nursery, Recorder())
    last = last_states(prep.run_dir)
    errors = {s: r for s, r in last.items() if r["state"] == "error"}
    assert set(errors) == {s for s, r in last.items() if r["index"] % 2 == 0}
    assert all(reason in r["reason"] and r["retryable"] is retryable for r in errors.values())
    assert sum(r["state"] == "done" for r in last.values()) == 4
    assert result["finished"] is not retryable  # retryable errors are not final


@pytest.mark.trio
async def test_a_session_charged_past_its_reservation_is_stopped(tmp_path):
    write_campaign(
        tmp_path,
        sessions=2,
        total="10",
        per_session="0.5",
        extra_runners='[runners.stub]\nkind = "support.stub_runners:Greedy"\n',
    )
    prep = engine.prepare(engine.Options(tmp_path / "t.toml", tmp_path / "runs", runner="stub"))
    async with trio.open_nursery() as nursery:
        await start(prep, nursery, Recorder())
    greedy = last_states(prep.run_dir)["fake_model-a-0000"]
    assert greedy["state"] == "error" and "exceeded the session's reservation" in greedy["reason"]
    # Each call costs $0.303 against a $0.0644 hold; the second passes the $0.5 reservation and
    # the session is stopped there. Honest accounting: the overrun is recorded, not clamped.
    assert greedy["cost_usd"] == 0.606


@pytest.mark.trio
async def test_pause_holds_a_session_that_was_waiting_for_budget(tmp_path, mock_clock):
    """The head session waits for reservations to come back; pausing meanwhile must keep it
    from starting when they do (pause means no launch, whatever the launcher was waiting on)."""
    prep = prepare(
        tmp_path,
        sessions=6,
        total="0.09",
        per_session="0.03",
        cost="0.01",
        latency=1,
        parallelism=5,
        models=("solo",),
    )
    rec = Recorder()
    async with trio.open_nursery() as nursery:
        scheduler, result = await start(prep, nursery, rec)
        await rec.until(lambda: in_call(rec) == 3)  # the cap: 3 x $0.03; the 4th waits for budget
        scheduler.pause()
        mock_clock.jump(1)
        await rec.until(lambda: running(rec) == 0)
        mock_clock.jump(60)
        await trio.testing.wait_all_tasks_blocked()
        assert len(rec.of(ev.SessionStarted)) == 3 and not scheduler.running_sessions()
        assert all(e.state == "done" for e in rec.of(ev.SessionEnded))  # nothing skipped either
        scheduler.resume()
        mock_clock.autojump_threshold = 0
    assert result["finished"] is True
    assert len(rec.of(ev.SessionStarted)) > 3


@pytest.mark.trio
async def test_a_runner_switched_mid_run_stays_active_on_resume(tmp_path, mock_clock):
    prep = prepare(
        tmp_path,
        sessions=4,
        total="10",
        latency=1,
        parallelism=1,
        extra_runners='[runners.other]\nkind = "fake"\ncost_usd = 0.02\n',
    )
    async with trio.open_nursery() as nursery:
        scheduler, _ = await start(prep, nursery, Recorder())
        scheduler.set_runner("other")
        scheduler.stop()
        mock_clock.autojump_threshold = 0
    again = engine.prepare(engine.Options(tmp_path / "t.toml", tmp_path / "runs", resume=True))
    again.lock.release()
    assert again.runner == "other"
