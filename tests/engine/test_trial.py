"""A quick trial (`--limit N`, `--models a,b`): some models, at most N sessions each, every session
given what the full campaign gives it; recorded in the identity, never mistaken for the full run."""

from __future__ import annotations

import json

import pytest
from support import benchtui, calls, journal, last_states, write_campaign

from benchtui.cli.main import main as cli
from benchtui.engine import identity_file
from benchtui.report import build


def test_a_trial_runs_what_it_was_cut_to_on_the_full_campaigns_budgets(tmp_path):
    write_campaign(tmp_path, sessions=5, total="1", per_model="0.5")  # per session: $0.03
    trial = benchtui("t.toml", "--no-ui", "--limit", "2", "--models", "fake/model-b", cwd=tmp_path)
    assert trial.returncode == 0, trial.stderr
    run_dir = tmp_path / "runs" / "t"
    assert sorted(calls(run_dir)) == ["fake_model-b-0000", "fake_model-b-0001"]
    starts = [r for r in journal(run_dir) if r["state"] == "running"]
    assert {r["reserved_usd"] for r in starts} == {0.03}  # what the full campaign reserves
    record = identity_file.read(run_dir)
    assert record.trial is not None and record.trial.describe() == "--limit 2 --models fake/model-b"
    assert "trial" in record.digests
    report = build([run_dir])
    assert report.to_json()["run_details"][0]["trial"] == {"limit": 2, "models": ["fake/model-b"]}
    from benchtui.report.text import render

    assert render(report).startswith("Campaign t (a quick trial)")


def test_a_trial_is_never_mistaken_for_the_full_run(tmp_path):
    write_campaign(tmp_path, sessions=3, total="1", per_model="0.5")
    assert benchtui("t.toml", "--no-ui", "--limit", "1", cwd=tmp_path).returncode == 0
    run_dir = tmp_path / "runs" / "t"
    # The full campaign, started without a flag or on --resume: refused, nothing run.
    full = benchtui("t.toml", "--no-ui", cwd=tmp_path)
    assert full.returncode == 2
    assert "runs/t holds a quick trial of campaign t (--limit 1): `benchtui t.toml --fresh`" in full.stderr
    grown = benchtui("t.toml", "--no-ui", "--resume", cwd=tmp_path)
    assert (
        grown.returncode == 2 and "it is a quick trial (--limit 1), never the full campaign" in grown.stderr
    )
    # The trial again: finished; resumed from its frozen copy: it goes on as the trial it is.
    again = benchtui("t.toml", "--no-ui", "--limit", "1", cwd=tmp_path)
    assert again.returncode == 0 and "nothing was run or spent" in again.stdout
    resumed = benchtui("--resume", "--no-ui", cwd=tmp_path)
    assert resumed.returncode == 0 and "0 of 2 sessions to run" in resumed.stdout, resumed.stderr
    assert len(calls(run_dir)) == 2
    # --fresh starts the full campaign; the trial is kept aside.
    fresh = benchtui("t.toml", "--no-ui", "--fresh", cwd=tmp_path)
    assert fresh.returncode == 0 and "previous run moved to" in fresh.stdout
    assert len(last_states(run_dir)) == 6 and identity_file.read(run_dir).trial is None
    (aside,) = [p for p in (tmp_path / "runs").iterdir() if p.name.startswith("t.")]
    assert identity_file.read(aside).trial is not None


def test_a_trial_of_tasks_takes_the_first_tasks(tmp_path):
    write_campaign(tmp_path, sessions=1, extra='tasks = ["r1", "r2", "r3"]\nrepeats = 2', total="1")
    path = tmp_path / "t.toml"
    path.write_text(path.read_text().replace("sessions_per_model = 1\n", ""))
    assert benchtui("t.toml", "--no-ui", "--limit", "2", cwd=tmp_path).returncode == 0
    tasks = {r["task"] for r in last_states(tmp_path / "runs" / "t").values()}
    assert tasks == {"r1", "r2"}
    assert benchtui("t.toml", "--no-ui", "--limit", "4", "--fresh", cwd=tmp_path).returncode == 0
    states = last_states(tmp_path / "runs" / "t").values()
    assert sorted(r["task"] for r in states) == ["r1", "r1", "r2", "r2", "r3", "r3"]  # one whole repeat


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--limit", "0"], "--limit must be at least 1"),
        (["--models", " , "], "--models needs model names"),
        (["--models", "fake/model-x"], "--models: no model 'fake/model-x' in campaign t (did you mean"),
    ],
)
def test_a_bad_trial_is_one_line_and_writes_nothing(tmp_path, capsys, argv, message):
    write_campaign(tmp_path)
    state = tmp_path / "runs"
    assert cli([str(tmp_path / "t.toml"), "--no-ui", "--state-dir", str(state), *argv]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1
    assert not state.exists()


def test_limit_without_a_campaign_file_is_refused(tmp_path, capsys):
    write_campaign(tmp_path, sessions=1)
    assert benchtui("t.toml", "--no-ui", cwd=tmp_path).returncode == 0
    assert cli(["--resume", "--limit", "1", "--no-ui", "--state-dir", str(tmp_path / "runs")]) == 2
    assert "--limit and --models cut a campaign file" in capsys.readouterr().err


def test_the_trial_is_in_the_json_report(tmp_path, capsys):
    write_campaign(tmp_path, sessions=2, total="1", per_model="0.5")
    assert benchtui("t.toml", "--no-ui", "--models", "fake/model-a", cwd=tmp_path).returncode == 0
    assert cli(["report", str(tmp_path / "runs" / "t"), "--format", "json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert [m["model"] for m in report["models"]] == ["fake/model-a"]
    assert report["run_details"][0]["trial"] == {"limit": None, "models": ["fake/model-a"]}
