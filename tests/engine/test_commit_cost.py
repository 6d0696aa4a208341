"""What a session costs in commits, and the order its lines reach the journal in."""

from __future__ import annotations

import json
from pathlib import Path

import trio

from benchtui.engine import events as ev
from benchtui.engine import run as engine

SESSIONS = 12


def fake_campaign(tmp_path: Path, parallelism: int) -> Path:
    (tmp_path / "target").mkdir()
    path = tmp_path / "c.toml"
    path.write_text(
        f'name = "c"\nsessions_per_model = {SESSIONS // 2}\nparallelism = {parallelism}\n'
        'runner = "fake"\n[budget]\ntotal_usd = 100\n[runners.fake]\nkind = "fake"\ncost_usd = 0.01\n'
        '[[models]]\nname = "m/a"\ninput_usd_per_mtok = 1\noutput_usd_per_mtok = 1\n'
        '[[models]]\nname = "m/b"\ninput_usd_per_mtok = 1\noutput_usd_per_mtok = 1\n'
        '[environment]\npath = "target"\n'
    )
    return path


def run(path: Path, state: Path) -> tuple[int, list[dict]]:
    prep = engine.prepare(engine.Options(path, state, fresh=True))
    seen = {}

    async def main() -> None:
        async with engine.open_run(prep, ev.EventBus()) as opened:
            seen["store"] = opened.store
            await opened.until_done()

    trio.run(main)
    lines = [json.loads(x) for x in (prep.run_dir / "sessions.jsonl").read_text().splitlines()]
    return seen["store"].commits, lines


def test_one_at_a_time_a_session_costs_two_commits_its_start_riding_the_last_end(tmp_path):
    commits, lines = run(fake_campaign(tmp_path, 1), tmp_path / "runs")
    assert [line["state"] for line in lines] == ["running", "done"] * SESSIONS
    # start, hold, end would be three a session; the next start shares the previous end's commit
    assert commits <= 2 * SESSIONS + 3, commits  # + the first start, the opening and closing commits


def test_a_slot_goes_to_the_next_session_only_after_the_end_line_is_queued(tmp_path):
    """Never a start line before the end that freed its slot: at parallelism 2, at most two
    sessions are between their `running` and their end line at any point of the journal."""
    _, lines = run(fake_campaign(tmp_path, 2), tmp_path / "runs")
    open_now, most = set(), 0
    for line in lines:
        if line["state"] == "running":
            open_now.add(line["session"])
        else:
            open_now.discard(line["session"])
        most = max(most, len(open_now))
    assert most == 2 and not open_now
    assert sum(line["state"] == "done" for line in lines) == SESSIONS
