"""Parallelism is a hard limit whatever the order of pause, kill, lower, raise and resume.

Every order of those five control calls (120 orders) is driven against
a running campaign; at each launch the scheduler's own count of running sessions is below the
parallelism in force, and the journal, replayed line by line, never shows more sessions running
at a start than the parallelism was when it launched. The bug this guards against: pause, kill a
running session, lower parallelism twice, resume ran 3 sessions at parallelism 2 (the session
waiting for the pause to end had taken its slot before the limit came down).
"""

from __future__ import annotations

import itertools
import json

import trio
import trio.testing
from support import Recorder, start, write_campaign

from benchtui.engine import events as ev
from benchtui.engine import run as engine
from benchtui.engine.scheduler import Scheduler

OPS = ("pause", "kill", "lower", "raise", "resume")
ORDERS = list(itertools.permutations(OPS))
LATENCY = 5.0


def running_at_starts(run_dir) -> list[int]:
    """For each start line of the journal, in order: how many sessions were running with it."""
    running: set[str] = set()
    counts = []
    for line in (run_dir / "sessions.jsonl").read_text().splitlines():
        rec = json.loads(line)
        if "state" not in rec:
            continue
        if rec["state"] == "running":
            running.add(rec["session"])
            counts.append(len(running))
        else:
            running.discard(rec["session"])
    return counts


async def drive(tmp_path, order: tuple[str, ...], clock: trio.testing.MockClock) -> list[int]:
    """Run a campaign at parallelism 3 through `order`; returns the parallelism at each launch."""
    path = write_campaign(tmp_path, sessions=3, total="10", latency=LATENCY, parallelism=3)
    prep = engine.prepare(engine.Options(path, tmp_path / "runs"))
    rec = Recorder()
    async with trio.open_nursery() as nursery:
        scheduler, result = await start(prep, nursery, rec)
        await rec.until(lambda: len(scheduler.running_sessions()) == 3)
        for op in order:
            if op == "pause":
                scheduler.pause()
            elif op == "resume":
                scheduler.resume()
            elif op == "lower":
                scheduler.set_parallelism(max(1, scheduler.parallelism - 1))
            elif op == "raise":
                scheduler.set_parallelism(scheduler.parallelism + 1)
            elif op == "kill" and scheduler.running_sessions():
                ended = len(rec.of(ev.SessionEnded))
                scheduler.kill(scheduler.running_sessions()[0])
                await rec.until(lambda ended=ended: len(rec.of(ev.SessionEnded)) > ended)
            await trio.testing.wait_all_tasks_blocked()
            clock.jump(LATENCY / 2)  # sessions end between some calls, not between others
            await trio.testing.wait_all_tasks_blocked()
        scheduler.resume()
        clock.autojump_threshold = 0
    assert result["finished"] is True
    return prep.run_dir


def test_no_order_of_control_calls_runs_more_sessions_than_the_parallelism(tmp_path, monkeypatch):
    at_launch: list[int] = []
    launch = Scheduler._attempt

    def counted(self, session, flight):
        assert len(self._attempts) < self.parallelism, (
            f"launching {session.id} with {len(self._attempts)} running at parallelism {self.parallelism}"
        )
        at_launch.append(self.parallelism)
        return launch(self, session, flight)

    monkeypatch.setattr(Scheduler, "_attempt", counted)
    assert ("pause", "kill", "lower", "resume", "raise") in ORDERS  # the order seen to fail
    for i, order in enumerate(ORDERS):
        at_launch.clear()
        clock = trio.testing.MockClock()
        (tmp_path / str(i)).mkdir()
        run_dir = trio.run(drive, tmp_path / str(i), order, clock, clock=clock)
        counts = running_at_starts(run_dir)
        assert len(counts) == len(at_launch), order
        over = [(n, p) for n, p in zip(counts, at_launch, strict=True) if n > p]
        assert not over, f"{order}: the journal shows {over[0][0]} running at parallelism {over[0][1]}"
