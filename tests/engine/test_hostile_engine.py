"""Hostile conditions for the engine: a cut journal, a failed write that is not an OSError,
retried sessions counted once, a campaign ending in infrastructure errors (issue: hostile)."""

from __future__ import annotations

import os
import re

import pytest
import trio
from support import ROOT, benchtui, journal, last_states, ledger, write_campaign

from benchtui.core.errors import StorageFailed
from benchtui.engine import events as ev
from benchtui.engine import run as engine

STUB = '[runners.stub]\nkind = "support.stub_runners:Raising"\nevery = 2\n'
TESTS_ON_PATH = {"PYTHONPATH": os.pathsep.join([str(ROOT / "tests"), os.environ.get("PYTHONPATH", "")])}


def table_rows(stdout: str) -> dict[str, list[int]]:
    """model -> [done, skip, error, killed] from the final table."""
    rows = {}
    for line in stdout.splitlines():
        m = re.match(r"^(fake/model-\w)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s", line)
        if m:
            rows[m.group(1)] = [int(x) for x in m.groups()[1:]]
    return rows


@pytest.mark.parametrize("cut", ["truncated", "deleted", "replaced"])
def test_resume_refuses_a_journal_that_forgot_money(tmp_path, cut):
    write_campaign(tmp_path, sessions=5, total="0.20")
    assert benchtui("t.toml", "--no-ui", cwd=tmp_path).returncode == 0
    run = tmp_path / "runs/t"
    lines = (run / "sessions.jsonl").read_text().splitlines(keepends=True)
    if cut == "truncated":  # at a line boundary: nothing looks torn
        (run / "sessions.jsonl").write_text("".join(lines[: len(lines) // 2]))
    elif cut == "deleted":
        (run / "sessions.jsonl").unlink()
    else:
        (run / "sessions.jsonl").write_text("")
    calls_before = (run / "calls.jsonl").read_text()
    again = benchtui("t.toml", "--no-ui", "--resume", cwd=tmp_path)
    assert again.returncode == 2, again.stderr
    assert "the journal was cut or replaced" in again.stderr and "Traceback" not in again.stderr
    assert len(again.stderr.strip().splitlines()) == 1
    assert (run / "calls.jsonl").read_text() == calls_before  # nothing ran, nothing was paid


@pytest.mark.trio
async def test_a_failed_write_of_any_kind_stops_the_campaign_and_nothing_acts_as_if_saved(
    tmp_path, monkeypatch
):
    write_campaign(tmp_path, sessions=6, total="10", latency=0.01, parallelism=2)
    prep = engine.prepare(engine.Options(tmp_path / "t.toml", tmp_path / "runs"))
    from benchtui.core import atomic

    real_append = atomic.AppendLog.append
    appends = 0

    def failing_append(self, data):
        nonlocal appends
        appends += 1
        if appends == 3:
            raise ValueError("embedded null byte")  # not an OSError
        return real_append(self, data)

    monkeypatch.setattr(atomic.AppendLog, "append", failing_append)
    seen: list[ev.Event] = []
    bus = ev.EventBus()
    bus.subscribe(seen.append)
    with trio.fail_after(20), pytest.raises(StorageFailed, match="ValueError: embedded null byte"):
        await engine.run(prep, bus)
    assert prep.lock.fd < 0  # released
    durable = {(r["session"], r["state"]) for r in journal(prep.run_dir)}
    announced = {(e.session, e.state) for e in seen if isinstance(e, ev.SessionEnded)}
    assert announced <= durable  # no end was announced that is not on disk


def test_a_campaign_ending_in_infrastructure_errors_says_so_and_counts_sessions_once(tmp_path):
    write_campaign(tmp_path, sessions=4, total="10", per_session="0.03", extra_runners=STUB)
    first = benchtui("t.toml", "--no-ui", "--runner", "stub", cwd=tmp_path, env=TESTS_ON_PATH)
    assert first.returncode == 75, first.stderr
    assert "4 sessions ended in infrastructure errors; --resume retries them" in first.stdout
    assert table_rows(first.stdout) == {"fake/model-a": [2, 0, 2, 0], "fake/model-b": [2, 0, 2, 0]}
    assert (
        "--resume" in benchtui("--help", cwd=tmp_path).stdout
        and "75" in benchtui("--help", cwd=tmp_path).stdout
    )

    second = benchtui("t.toml", "--no-ui", "--resume", "--runner", "fake", cwd=tmp_path, env=TESTS_ON_PATH)
    assert second.returncode == 0, second.stderr
    # 4 sessions each: counted by their current state, not per attempt (2 errors were retried)
    assert table_rows(second.stdout) == {"fake/model-a": [4, 0, 0, 0], "fake/model-b": [4, 0, 0, 0]}
    doc = ledger(tmp_path / "runs/t")
    for account in doc["models"].values():
        assert account["sessions_done"] == 4 and account["sessions_error"] == 0
    assert {r["state"] for r in last_states(tmp_path / "runs/t").values()} == {"done"}
    # A further resume rebuilds the same counts from the journal.
    third = benchtui("t.toml", "--no-ui", "--resume", cwd=tmp_path, env=TESTS_ON_PATH)
    assert third.returncode == 0
    assert table_rows(third.stdout) == {"fake/model-a": [4, 0, 0, 0], "fake/model-b": [4, 0, 0, 0]}
