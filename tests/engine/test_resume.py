"""F6/F7: SIGKILL at any instant, then --resume: nothing re-run, re-charged, duplicated or lost."""

from __future__ import annotations

import json
import random
import signal
import time
from collections import Counter
from decimal import Decimal
from pathlib import Path

import pytest
from support import (
    benchtui,
    calls,
    check_accounts,
    check_caps_on_disk,
    check_reconciled,
    journal,
    last_states,
    ledger,
    money,
    popen,
    write_campaign,
)

FINAL = {"done", "skipped_budget", "killed"}


def wait_for(predicate, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def finished_sessions(run: Path) -> set[str]:
    if not (run / "sessions.jsonl").exists():
        return set()
    return {s for s, r in last_states(run).items() if r["state"] == "done"}


def result_rows(run: Path) -> list[str]:
    rows = []
    for path in (run / "results").glob("*.json"):
        rows += [r["session"] for r in json.loads(path.read_text())["results"]]
    return rows


def test_sigkill_then_resume_runs_only_the_rest(tmp_path):
    write_campaign(tmp_path, sessions=10, total="10", per_session="0.03", latency=0.1, parallelism=2)
    run = tmp_path / "runs/t"
    proc = popen("t.toml", "--no-ui", cwd=tmp_path)
    wait_for(lambda: len(finished_sessions(run)) >= 4)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    done_before = finished_sessions(run)
    calls_before = len(calls(run))
    spent_before = ledger(run)["totals"]["spent_usd"]

    resumed = benchtui("t.toml", "--no-ui", "--resume", cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    new_calls = calls(run)[calls_before:]
    assert not done_before & set(new_calls), "a finished session ran again"
    assert set(new_calls) | done_before == {s for s in last_states(run)}
    assert ledger(run)["totals"]["spent_usd"] >= spent_before  # nothing recorded was lost
    assert Counter(r["state"] for r in last_states(run).values()) == {"done": 20}
    rows = result_rows(run)
    assert len(rows) == len(set(rows)) == 20
    check_accounts(run)


def test_fresh_starts_over_and_keeps_the_old_run(tmp_path):
    write_campaign(tmp_path, sessions=3, total="10", per_session="0.03")
    assert benchtui("t.toml", "--no-ui", cwd=tmp_path).returncode == 0
    old = (tmp_path / "runs/t/sessions.jsonl").read_bytes()
    again = benchtui("t.toml", "--no-ui", "--fresh", cwd=tmp_path)
    assert again.returncode == 0
    assert "previous run moved to" in again.stdout
    asides = [p for p in (tmp_path / "runs").iterdir() if p.name.startswith("t.")]
    assert len(asides) == 1 and (asides[0] / "sessions.jsonl").read_bytes() == old
    assert len(calls(tmp_path / "runs/t")) == 6  # everything ran again, in the new run dir


def test_resume_of_a_finished_run_runs_nothing(tmp_path):
    write_campaign(tmp_path, sessions=3)
    assert benchtui("t.toml", "--no-ui", cwd=tmp_path).returncode == 0
    before, calls_before = ledger(tmp_path / "runs/t"), calls(tmp_path / "runs/t")
    again = benchtui("--resume", "--no-ui", cwd=tmp_path)
    assert again.returncode == 0 and "0 of 6 sessions to run" in again.stdout
    assert calls(tmp_path / "runs/t") == calls_before
    assert ledger(tmp_path / "runs/t") == before


def test_crash_mid_ledger_write_and_torn_journal_line(tmp_path):
    """The on-disk shapes a kill during a write leaves: a half temp ledger, a torn journal line."""
    write_campaign(tmp_path, sessions=4, total="10", per_session="0.03")
    assert benchtui("t.toml", "--no-ui", cwd=tmp_path).returncode == 0
    run = tmp_path / "runs/t"
    (run / ".ledger.toml.tmp").write_text("[totals]\nspent_usd = 0.0")
    with open(run / "sessions.jsonl", "a") as f:
        f.write('{"session":"fake_model-a-0000","model":"fake/mo')
    again = benchtui("t.toml", "--no-ui", "--resume", cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert journal(run)  # parses: the torn tail was cut before appending
    check_accounts(run)


def journal_size(run: Path) -> int:
    path = run / "sessions.jsonl"
    return path.stat().st_size if path.exists() else 0


@pytest.mark.slow
def test_repeated_sigkill_at_random_instants(tmp_path):
    """30 kills at random instants while sessions run (the store writes continuously, so many
    land mid-write); after each: the ledger parses, no cap is exceeded, no finished session
    ran again, and what --resume rebuilds adds up. Finally every session is final once."""
    rng = random.Random(1234)
    write_campaign(
        tmp_path,
        sessions=60,
        parallelism=2,
        total="2.0",
        per_model="1.0",
        per_session="0.03",
        cost="0.02",
        latency=0.05,
    )
    run = tmp_path / "runs/t"
    done_at_kill: set[str] = set()
    calls_at_kill: list[str] = []
    progress = []
    for _ in range(30):
        size = journal_size(run)
        proc = popen("t.toml", "--no-ui", "--resume", cwd=tmp_path)
        wait_for(lambda p=proc, n=size: journal_size(run) > n or p.poll() is not None)
        time.sleep(rng.uniform(0, 0.15))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        ledger(run)  # always parses
        assert not set(calls(run)[len(calls_at_kill) :]) & done_at_kill, "a finished session ran again"
        done_at_kill, calls_at_kill = finished_sessions(run), calls(run)
        progress.append(len(done_at_kill))
        check_caps_on_disk(run)
        check_reconciled(tmp_path / "t.toml", tmp_path / "runs")
    assert progress[-1] < 90, f"kills did not land mid-campaign: {progress}"
    final = benchtui("t.toml", "--no-ui", "--resume", cwd=tmp_path)
    assert final.returncode == 0, final.stderr
    last = last_states(run)
    # Interrupted calls are charged at their worst case (wasted), so fewer than 98 fit the caps.
    states = Counter(r["state"] for r in last.values())
    assert set(states) == {"done", "skipped_budget"} and sum(states.values()) == 120
    assert ledger(run)["totals"]["wasted_usd"] > 0
    # F6: every call that really happened (the call log) is charged; holds left by a kill
    # between the hold and the call may over-count, never under-count.
    spent, made = money(ledger(run)["totals"]["spent_usd"]), len(calls(run))
    assert made * Decimal("0.02") <= spent <= (made + 30 * 2) * Decimal("0.02")
    assert not set(calls(run)[len(calls_at_kill) :]) & done_at_kill
    rows = result_rows(run)
    assert len(rows) == len(set(rows)) == states["done"]
    check_accounts(run)
    assert ledger(run)["totals"]["reserved_usd"] == 0


def test_ctrl_c_twice_interrupts_running_sessions_and_resume_finishes(tmp_path):
    write_campaign(
        tmp_path,
        sessions=6,
        total="10",
        latency=30,
        parallelism=3,
        extra_runners='[runners.fast]\nkind = "fake"\ncost_usd = 0.03\n',
    )
    run = tmp_path / "runs/t"
    proc = popen("t.toml", "--no-ui", cwd=tmp_path)
    wait_for(
        lambda: (
            sum(r["state"] == "running" for r in last_states(run).values()) == 3
            if (run / "sessions.jsonl").exists()
            else False
        )
    )
    proc.send_signal(signal.SIGINT)
    time.sleep(0.3)
    assert proc.poll() is None  # once: running sessions may finish
    proc.send_signal(signal.SIGINT)
    out, _ = proc.communicate(timeout=10)
    assert proc.returncode == 130
    assert "interrupting running sessions" in out
    last = last_states(run)
    interrupted = [r for r in last.values() if r["state"] == "error"]
    assert len(interrupted) == 3 and all(r["retryable"] for r in interrupted)
    assert ledger(run)["running"] == {}
    # The active runner may change on resume (it is recorded per session).
    resumed = benchtui("t.toml", "--no-ui", "--resume", "--runner", "fast", cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    last = last_states(run)
    assert {r["state"] for r in last.values()} == {"done"}
    assert sorted(r["attempt"] for r in last.values()) == [1] * 9 + [2] * 3
    check_accounts(run)


def test_results_are_rewritten_when_a_kill_left_them_stale(tmp_path):
    write_campaign(tmp_path, sessions=3, total="10")
    run = tmp_path / "runs/t"
    assert benchtui("t.toml", "--no-ui", cwd=tmp_path).returncode == 0
    for path in (run / "results").iterdir():  # as if killed while writing them
        path.unlink()
    again = benchtui("t.toml", "--no-ui", "--resume", cwd=tmp_path)
    assert again.returncode == 0 and "0 of 6 sessions to run" in again.stdout
    assert len(result_rows(run)) == 6
    before = {p: p.stat().st_mtime_ns for p in (run / "results").iterdir()}
    assert benchtui("t.toml", "--no-ui", "--resume", cwd=tmp_path).returncode == 0
    assert {p: p.stat().st_mtime_ns for p in (run / "results").iterdir()} == before  # current: kept


def test_output_going_away_stops_launching_quietly(tmp_path):
    """`benchtui … | head`: no traceback; like one Ctrl-C (running sessions finish), resumable."""
    write_campaign(tmp_path, sessions=10, total="10", latency=0.3, parallelism=2)
    proc = popen("t.toml", "--no-ui", cwd=tmp_path)
    proc.stdout.readline()
    proc.stdout.close()  # the reader went away
    assert proc.wait(timeout=20) == 130
    assert "Traceback" not in proc.stderr.read()
    run = tmp_path / "runs/t"
    assert 0 < len(last_states(run)) < 20 and ledger(run)["running"] == {}
    assert benchtui("t.toml", "--no-ui", "--resume", cwd=tmp_path).returncode == 0
