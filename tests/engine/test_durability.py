"""F7 at the cost of one fsync: the journal is the write-ahead record, fsynced once a group commit;
ledger.toml, the results and the outcome details are derived from it, never fsynced, and brought
up to date when the run is opened again. Bigger groups keep the order a function of the plan and
the outcomes."""

from __future__ import annotations

import json
import os
import threading

import pytest
import trio
from support import Recorder, journal, ledger, start, write_campaign

from benchtui.engine import events as ev
from benchtui.engine import results
from benchtui.engine import run as engine
from benchtui.engine.breaker import TRIP_AFTER


def prepare(tmp_path, **kw) -> engine.PreparedRun:
    write_campaign(tmp_path, **kw)
    return engine.prepare(engine.Options(tmp_path / "t.toml", tmp_path / "runs"))


async def run_to_end(prep, recorder: Recorder | None = None) -> dict[str, bool]:
    async with trio.open_nursery() as nursery:
        _, result = await start(prep, nursery, recorder)
    return result


@pytest.mark.trio
async def test_only_the_journal_is_fsynced_and_once_a_commit(tmp_path, monkeypatch):
    prep = prepare(tmp_path, sessions=30, total="10", parallelism=4)
    synced: list[str] = []
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        synced.append(os.path.basename(os.readlink(f"/proc/self/fd/{fd}")))
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    rec = Recorder()
    with prep:
        assert (await run_to_end(prep, rec))["finished"] is True
    commits = len(rec.of(ev.AccountsCommitted))
    assert set(synced) == {"sessions.jsonl"}, set(synced)  # not the ledger, its folder, results, details
    assert 0 < len(synced) <= commits
    assert len(synced) <= 2 * 60 + 2  # two commits a session at most (a start rides an end's commit)


@pytest.mark.trio
async def test_a_start_rides_the_commit_of_the_end_that_freed_its_slot(tmp_path):
    """One slot, zero-latency sessions: a session's start, its call's hold, its end: three
    durable points, but the next start goes in the previous end's commit."""
    prep = prepare(tmp_path, sessions=10, total="10", parallelism=1)
    rec = Recorder()
    with prep:
        assert (await run_to_end(prep, rec))["finished"] is True
    commits = len(rec.of(ev.AccountsCommitted))
    assert commits <= 2 * 20 + 3, commits  # 3 a session without the hand-over (62 here)


@pytest.mark.trio
async def test_events_go_out_durable_and_in_journal_order(tmp_path):
    """Starts, ends and skips are announced once their line is on disk, in the journal's order,
    whichever waiter of a batch runs first."""
    prep = prepare(tmp_path, sessions=40, total="2.0", per_session="0.03", parallelism=4)
    rec = Recorder()
    on_disk: list[int] = []
    rec_call = rec.__call__

    def listen(event):
        if isinstance(event, ev.SessionStarted | ev.SessionEnded):
            on_disk.append(len(journal(prep.run_dir)))
        rec_call(event)

    with prep:
        async with trio.open_nursery() as nursery:
            await start(prep, nursery, listen)
    announced = [
        (e.session, "running" if isinstance(e, ev.SessionStarted) else e.state)
        for e in rec.events
        if isinstance(e, ev.SessionStarted | ev.SessionEnded)
    ]
    written = [(r["session"], r["state"]) for r in journal(prep.run_dir)]
    assert {state for _, state in written} == {"running", "done", "skipped_budget"}
    assert announced == written
    assert all(n >= i + 1 for i, n in enumerate(on_disk))  # the line was on disk when announced


@pytest.mark.trio
@pytest.mark.parametrize("attempt", range(3))  # the order of ends within a batch varies
async def test_a_slot_is_handed_on_only_after_the_breaker_counted_the_end_that_freed_it(tmp_path, attempt):
    """A model whose provider is down, two slots: the launch that takes the slot of the end that
    trips its breaker must see it tripped."""
    from test_breaker import DOWN, outage

    prep = outage(tmp_path, sessions=12, parallelism=2)
    with prep:
        await run_to_end(prep)
    lines = journal(prep.run_dir)
    ends = [i for i, r in enumerate(lines) if r["model"] == DOWN and r["state"] == "error"]
    assert len(ends) >= TRIP_AFTER
    late = [
        r["session"] for r in lines[ends[TRIP_AFTER - 1] :] if r["model"] == DOWN and r["state"] == "running"
    ]
    assert late == [], late


@pytest.mark.trio
@pytest.mark.parametrize("attempt", range(3))
async def test_the_last_results_hold_every_row_when_a_refresh_raced_the_last_session(
    tmp_path, monkeypatch, autojump_clock, attempt
):
    """A refresh takes its snapshot before the last session ends and finishes writing after it
    (a barrier between its snapshot and its rename): its files are newer than the journal yet
    miss rows; the closing write must not be skipped."""
    prep = prepare(tmp_path, sessions=10, total="10", parallelism=2, latency=1)
    barrier, one_at_a_time = threading.Event(), threading.Lock()  # as the engine writes them
    real_write_all = results.write_all
    rows: list[int] = []

    def write_all(run_dir, snapshot):
        with one_at_a_time:
            if not rows:  # the refresh: its snapshot is taken; its rename waits for the last end
                assert barrier.wait(timeout=30)
            rows.append(len(snapshot.models["fake/model-a"].records))
            return real_write_all(run_dir, snapshot)

    monkeypatch.setattr(results, "write_all", write_all)
    monkeypatch.setattr(engine, "_refresh_results", lambda run, bus: trio.sleep_forever())  # this one only
    rec = Recorder()
    opened: list[engine.OpenRun] = []
    taken: list[results.Snapshot] = []

    def listen(event):
        rec(event)
        if not isinstance(event, ev.SessionEnded):
            return
        ends = rec.of(ev.SessionEnded)
        if event.model == "fake/model-a" and sum(e.model == event.model for e in ends) == 9:
            # the refresh's snapshot, taken as model-a's 9th end is durable: before its last, on
            # any machine (waking a task for it raced the last ends under load)
            taken.append(opened[0].results_snapshot())
        if len(ends) == 20:
            barrier.set()  # the last end is durable: now the refresh writes what it took before

    async def refresh_early(run):
        await rec.until(lambda: bool(taken))
        await run.write_results(taken[0])

    bus = ev.EventBus()
    bus.subscribe(listen)
    with prep:
        async with engine.open_run(prep, bus) as run, trio.open_nursery() as nursery:
            opened.append(run)
            nursery.start_soon(refresh_early, run)
            await run.until_done()
    assert rows[0] < 10 and rows[-1] == 10, rows
    doc = json.loads((prep.run_dir / "results/fake_model-a.json").read_text())
    assert len(doc["results"]) == 10
    size = os.path.getsize(prep.run_dir / "sessions.jsonl")
    assert results.up_to_date(prep.run_dir, ["fake/model-a", "fake/model-b"], size)


def test_a_ledger_ahead_of_its_journal_is_refused_even_when_no_money_is_missing(tmp_path):
    """The last lines were skips (no money, nothing done): only the journal position can tell
    that the journal lost them."""
    from support import benchtui

    write_campaign(tmp_path, sessions=5, total="0.20")
    assert benchtui("t.toml", "--no-ui", cwd=tmp_path).returncode == 0
    run = tmp_path / "runs/t"
    lines = (run / "sessions.jsonl").read_text().splitlines(keepends=True)
    assert json.loads(lines[-1])["state"] == "skipped_budget"
    (run / "sessions.jsonl").write_text("".join(lines[:-1]))
    again = benchtui("t.toml", "--no-ui", "--resume", cwd=tmp_path)
    assert again.returncode == 2 and "the journal was cut or replaced" in again.stderr, again.stderr
    assert ledger(run)["totals"]["spent_usd"] == 0.18  # nothing ran
