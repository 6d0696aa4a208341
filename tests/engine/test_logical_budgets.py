"""Logical budgets (`[budget.per_session]`): hard per-session counters, durable before each
action, exact at any parallelism, never granting an extra unit across SIGKILL and --resume."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
import tomllib
from collections import Counter
from pathlib import Path

import pytest
import trio
from support import benchtui, journal, last_states, write_campaign
from support.mini import run_campaign

from benchtui.engine import campaign as campaign_file
from benchtui.engine.campaign import identity_digest

TESTS = Path(__file__).parents[1]
LIMITS = {"model_calls": 5, "shell_actions": 7, "tools.pred": 9, "tools.pred solve": 3}
PER_SESSION = """
[budget.per_session]
model_calls = 5
shell_actions = 7
[budget.per_session.tools]
pred = 9
"pred solve" = 3
"""


def counting_campaign(tmp_path: Path, *, sessions: int, parallelism: int, tries: int = 30) -> Path:
    log = tmp_path / "performed.log"
    runner = f'[runners.count]\nkind = "support.stub_runners:Counting"\nlog = "{log}"\ntries = {tries}\n'
    return write_campaign(
        tmp_path,
        sessions=sessions,
        parallelism=parallelism,
        total="10",
        per_session="0.05",
        extra_runners=runner + PER_SESSION,
    )


def performed(tmp_path: Path) -> Counter[tuple[str, int, str]]:
    """(session, attempt, counter) -> actions the agent really performed after a grant."""
    rows = [line.split("\t") for line in (tmp_path / "performed.log").read_text().splitlines()]
    return Counter((s, int(a), c) for s, a, c in rows)


def used(counters: dict, counter: str) -> int:
    if counter.startswith("tools."):
        return counters["tools"][counter.removeprefix("tools.")]
    return counters[counter]


@pytest.mark.trio
@pytest.mark.parametrize("parallelism", [1, 16])
async def test_each_counter_stops_at_exactly_its_limit(tmp_path, parallelism, monkeypatch):
    monkeypatch.setenv("BENCHTUI_RUNNER", "count")
    path = counting_campaign(tmp_path, sessions=16, parallelism=parallelism)
    running_ledgers = []

    async def watch_ledger(recorder):  # the ledger shows the counters of running sessions
        with trio.move_on_after(20):
            while not running_ledgers:
                ledger = tomllib.loads((tmp_path / "runs/t/ledger.toml").read_text())
                running_ledgers.extend(
                    f["counters"] for f in ledger.get("running", {}).values() if "counters" in f
                )
                await trio.sleep(0.001)

    await run_campaign(path, tmp_path / "runs", during=watch_ledger)
    did = performed(tmp_path)
    ends = last_states(tmp_path / "runs/t")
    assert len(ends) == 32 and {e["state"] for e in ends.values()} == {"done"}
    for sid, end in ends.items():
        for counter, limit in LIMITS.items():
            assert did[(sid, 1, counter)] == limit, (sid, counter)  # exactly the limit, every time
            assert used(end["counters"], counter) == limit
        assert "submits" not in end["counters"]  # no limit, never used: not listed
        assert sorted(end["exhausted"]) == sorted(LIMITS)
    assert running_ledgers and all(set(c) <= set(LIMITS) for c in running_ledgers)


def test_sigkill_at_any_instant_never_grants_an_extra_unit(tmp_path):
    """Kill benchtui at random instants while agents spend their counters, --resume each time:
    in every attempt the agent performed at most the limit, and the journal accounts for at
    least every unit that was used (a unit is on disk before its action)."""
    rng = random.Random(14)
    path = counting_campaign(tmp_path, sessions=8, parallelism=4, tries=40)
    env = {**os.environ, "PYTHONPATH": str(TESTS), "BENCHTUI_RUNNER": "count"}
    run = tmp_path / "runs/t"
    kills = 0
    for attempt in range(16):
        before = len(performed(tmp_path)) if (tmp_path / "performed.log").exists() else 0
        proc = subprocess.Popen(
            [sys.executable, "-m", "benchtui", path.name, "--no-ui", "--resume"],
            cwd=tmp_path,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        deadline = time.monotonic() + 30
        while proc.poll() is None and time.monotonic() < deadline:
            if (tmp_path / "performed.log").exists() and len(performed(tmp_path)) > before:
                break
            time.sleep(0.0005)
        if attempt % 2:  # else at once: right after an action, before anything else was saved
            time.sleep(rng.uniform(0, 0.05))
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
            kills += 1
        proc.wait()
    final = benchtui(path.name, "--no-ui", "--resume", cwd=tmp_path, env=env, timeout=120)
    assert final.returncode == 0, final.stderr
    assert kills >= 8
    did = performed(tmp_path)
    ended = {(r["session"], r["attempt"]): r for r in journal(run) if r["state"] != "running"}
    interrupted = [r for r in ended.values() if r["state"] == "error" and r["retryable"]]
    assert interrupted, "no kill landed while sessions ran"
    for (sid, attempt, counter), n in did.items():
        assert n <= LIMITS[counter], (sid, attempt, counter, n)
        assert used(ended[(sid, attempt)]["counters"], counter) >= n, (sid, attempt, counter)
    assert {r["state"] for r in last_states(run).values()} == {"done"}


def test_bad_logical_budgets_are_one_line_errors(tmp_path):
    for bad, says in [
        ("model_calls = 0", "greater than 0"),
        ("model_calls = 2.5", "valid integer"),
        ("shell_actions = true", "valid integer"),
        ("bogus = 1", "budget.per_session.bogus: unknown key"),
        ('[budget.per_session.tools]\n"pred  solve" = 3', "one space apart"),
        ("[budget.per_session.tools]\npred = 0", "greater than 0"),
    ]:
        write_campaign(tmp_path, extra_runners=f"[budget.per_session]\n{bad}\n")
        done = benchtui("t.toml", "--no-ui", cwd=tmp_path)
        assert done.returncode == 2 and says in done.stderr, (bad, done.stderr)
        assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr
        assert not (tmp_path / "runs").exists()


def test_limits_are_identity_and_old_campaigns_keep_theirs(tmp_path):
    plain = campaign_file.load(write_campaign(tmp_path))
    # The digest a run of this campaign stored before logical budgets existed (commit 78f9819).
    assert identity_digest(plain.identity_parts("fp"))["budget"] == "4dc892aecf8f95c0"
    write_campaign(tmp_path, extra_runners=PER_SESSION)
    assert benchtui("t.toml", "--no-ui", cwd=tmp_path).returncode == 0
    write_campaign(tmp_path, extra_runners=PER_SESSION.replace("model_calls = 5", "model_calls = 6"))
    done = benchtui("t.toml", "--no-ui", "--resume", cwd=tmp_path)
    assert done.returncode == 2 and "budget" in done.stderr


def test_a_runner_that_cannot_apply_a_limit_is_named_at_start(tmp_path):
    write_campaign(tmp_path, extra_runners=PER_SESSION)
    done = benchtui("t.toml", "--no-ui", cwd=tmp_path)
    assert done.returncode == 0
    assert (
        "runner fake (fake) cannot enforce shell_actions, tools.pred, tools.pred solve"
        in done.stdout + done.stderr
    )
    ends = last_states(tmp_path / "runs/t")
    assert all(e["counters"]["model_calls"] == 1 for e in ends.values() if e["state"] == "done")
