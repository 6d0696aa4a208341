"""Re-running never spends twice by accident: `benchtui CAMPAIGN` on a run that exists, without a
flag, refuses an unfinished one (its progress, spend and both commands), shows a finished one,
and refuses a run of another identity; `--fresh` is the only way to start over."""

from __future__ import annotations

import os
import shlex
from pathlib import Path

from support import ROOT, benchtui, calls, last_states, write_campaign
from support.report import scripted_toml

SUPPORT = {"PYTHONPATH": f"{ROOT / 'tests'}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
DOWN = '[runners.provider]\nkind = "support.report:ProviderRunner"\ndown = ["fake/model-b"]\n'


def files(run_dir: Path) -> dict[str, bytes]:
    """Every file of a run dir but its lock (which takes the pid of whoever locks it)."""
    return {
        str(p.relative_to(run_dir)): p.read_bytes() for p in sorted(run_dir.rglob("*")) if p.is_file()
    } | {".lock": b""}


def unfinished_run(tmp_path: Path) -> Path:
    """model-a's 4 sessions done ($0.01 each), model-b's provider down: retryable errors."""
    (tmp_path / "target").mkdir()
    (tmp_path / "c.toml").write_text(
        scripted_toml(n=4, runner="provider", extra=DOWN, cap="0.2", total="0.4")
    )
    done = benchtui("c.toml", "--no-ui", cwd=tmp_path, env=SUPPORT)
    assert done.returncode == 75, done.stderr  # not finished: infrastructure errors
    return tmp_path / "runs" / "t"


def test_an_unfinished_run_started_again_is_refused_with_its_progress_spend_and_both_commands(tmp_path):
    run_dir = unfinished_run(tmp_path)
    before = files(run_dir)
    again = benchtui("c.toml", "--no-ui", cwd=tmp_path, env=SUPPORT)
    assert again.returncode == 2 and again.stdout == ""
    (line,) = again.stderr.splitlines()
    assert "runs/t holds this campaign, unfinished: 4 of 8 sessions ended, $0.0400 of $0.4000 spent" in line
    assert "`benchtui c.toml --resume` continues it" in line
    assert "`benchtui c.toml --fresh` starts over and spends a new budget" in line
    assert files(run_dir) == before  # nothing run, nothing written
    assert sorted(p.name for p in (tmp_path / "runs").iterdir()) == [".latest", "t"]  # nothing moved aside
    # The command it names does what it says: it continues the run (model-b retried, a's kept).
    resume = line.split("`")[1]
    assert resume == "benchtui c.toml --resume"
    resumed = benchtui(*shlex.split(resume)[1:], "--no-ui", cwd=tmp_path, env=SUPPORT)
    assert resumed.returncode == 75, resumed.stderr
    states = last_states(run_dir)
    assert 2 in {r["attempt"] for s, r in states.items() if s.startswith("fake_model-b")}
    assert {r["attempt"] for s, r in states.items() if s.startswith("fake_model-a")} == {1}


def test_a_finished_run_started_again_prints_its_summary_and_spends_nothing(tmp_path):
    write_campaign(tmp_path, sessions=3, total="1", per_session="0.03")
    assert benchtui("t.toml", "--no-ui", cwd=tmp_path).returncode == 0
    run_dir = tmp_path / "runs" / "t"
    before, latest = files(run_dir), (tmp_path / "runs" / ".latest").stat().st_mtime_ns
    again = benchtui("t.toml", "--no-ui", cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    out = again.stdout
    assert "campaign t: finished (6/6 sessions ended); nothing was run or spent" in out
    assert "fake/model-a" in out and "$0.0900" in out  # the summary table
    assert f"results: {Path('runs/t/results')}/" in out and "report: `benchtui report runs/t`" in out
    assert len(calls(run_dir)) == 6 and files(run_dir) == before
    assert (tmp_path / "runs" / ".latest").stat().st_mtime_ns == latest


def test_fresh_is_the_only_way_to_start_over(tmp_path):
    path = write_campaign(tmp_path, sessions=2, total="1", per_session="0.03")
    assert benchtui("t.toml", "--no-ui", cwd=tmp_path).returncode == 0
    run_dir = tmp_path / "runs" / "t"
    before = files(run_dir)
    # Another identity (a runner profile changed): refused without a flag, and by --resume.
    path.write_text(path.read_text().replace("cost_usd = 0.03", "cost_usd = 0.02"))
    again = benchtui("t.toml", "--no-ui", cwd=tmp_path)
    assert again.returncode == 2
    assert "runs/t holds another run of campaign t (changed: runners)" in again.stderr
    assert "`benchtui t.toml --fresh` starts over (the old run is moved aside, never deleted)" in again.stderr
    resumed = benchtui("t.toml", "--no-ui", "--resume", cwd=tmp_path)
    assert resumed.returncode == 2 and "changed since it started: runners" in resumed.stderr
    assert files(run_dir) == before and len(calls(run_dir)) == 4
    fresh = benchtui("t.toml", "--no-ui", "--fresh", cwd=tmp_path)
    assert fresh.returncode == 0 and "previous run moved to runs/t." in fresh.stdout
    (aside,) = [p for p in (tmp_path / "runs").iterdir() if p.name.startswith("t.")]
    assert files(aside) == before and len(calls(run_dir)) == 4
    assert all(r["state"] == "done" for r in last_states(run_dir).values())


def test_the_commands_name_the_state_dir_given(tmp_path):
    write_campaign(tmp_path, sessions=1, total="1", per_session="0.03")
    state = tmp_path / "elsewhere"
    assert benchtui("t.toml", "--no-ui", "--state-dir", state, cwd=tmp_path).returncode == 0
    (tmp_path / "t.toml").write_text(
        (tmp_path / "t.toml").read_text().replace("cost_usd = 0.03", "cost_usd = 0.02")
    )
    again = benchtui("t.toml", "--no-ui", "--state-dir", state, cwd=tmp_path)
    assert again.returncode == 2 and f"`benchtui t.toml --state-dir {state} --fresh`" in again.stderr
