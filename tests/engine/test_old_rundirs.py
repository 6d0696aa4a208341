"""Run dirs written by the release before the move (0a81a35) keep working after it.

The fixtures (tests/fixtures/rundirs/, see its README) were recorded with that release: a finished
fake campaign and a demo campaign stopped by SIGINT after its first session, whose frozen
campaigns spell the demo runner `benchtui.ui.demo:DemoRunner`. `benchtui report` and `ctl status`
read them without their target; `--resume` continues the stopped one (its identity, digested by
the old release, still matches), from its frozen campaign or from a campaign file that spells the
kind the new way (`kind = "demo"`).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from support import ROOT

from benchtui.cli.main import main as cli
from benchtui.core import registry
from benchtui.engine import campaign as campaign_file
from benchtui.engine import rundir

FIXTURES = ROOT / "tests" / "fixtures" / "rundirs"
RECORDED_TARGET = "/tmp/house-fix/target"


def copy_run(tmp_path: Path, name: str, target: Path) -> Path:
    """The fixture run dir `name` under tmp_path/runs, its frozen campaign pointing at `target`."""
    run_dir = tmp_path / "runs" / name
    shutil.copytree(FIXTURES / name, run_dir)
    frozen = run_dir / rundir.CAMPAIGN
    frozen.write_text(frozen.read_text().replace(RECORDED_TARGET, str(target)))
    (tmp_path / "runs" / rundir.LATEST).write_text(name + "\n")
    return run_dir


def target_copy(tmp_path: Path) -> Path:
    target = tmp_path / "target"
    shutil.copytree(FIXTURES / "target", target)
    return target


def test_the_fixtures_are_what_the_old_release_wrote():
    for name in ("finished", "stopped"):
        assert 'kind = "benchtui.ui.demo:DemoRunner"' in (FIXTURES / name / rundir.CAMPAIGN).read_text()
        assert (FIXTURES / name / "identity.json").is_file()
        assert not (FIXTURES / name / ".lock").exists()


def test_report_reads_old_run_dirs_without_their_target(tmp_path, capsys):
    gone = tmp_path / "no-such-target"
    runs = [copy_run(tmp_path, name, gone) for name in ("finished", "stopped")]
    for run_dir in runs:
        assert cli(["report", str(run_dir), "--format", "json"]) == 0
        report = json.loads(capsys.readouterr().out)
        assert report["runs"] == [str(run_dir)]
    finished = {m["model"]: m for m in _report(runs[0], capsys)["models"]}
    assert finished["fake/model-a"]["done"] == 2
    # The old fake's certificate: claimed by its runner (no verifier), never a verified bug.
    assert finished["fake/model-a"]["bugs"] == 1 and finished["fake/model-a"]["verified_bugs"] == 0
    assert finished["fake/model-b"]["spent_usd"] == 0.02
    stopped = {m["model"]: m for m in _report(runs[1], capsys)["models"]}
    assert stopped["acme/coder-xl"]["done"] == 1 and stopped["acme/coder-mini"]["ran"] == 0
    assert not gone.exists()


def _report(run_dir: Path, capsys) -> dict:
    assert cli(["report", str(run_dir), "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_ctl_status_reads_old_run_dirs_without_their_target(tmp_path, capsys):
    gone = tmp_path / "no-such-target"
    stopped = copy_run(tmp_path, "stopped", gone)
    assert cli(["ctl", str(stopped), "status"]) == 0
    out = capsys.readouterr().out
    assert "stopped, 5 of 6 sessions to run (not running)" in out
    assert "1/6 sessions ended" in out
    finished = copy_run(tmp_path, "finished", gone)
    assert cli(["ctl", str(finished), "status"]) == 0
    assert "campaign finished: finished (not running)" in capsys.readouterr().out


def test_old_kinds_resolve_and_digest_as_the_old_release_did(tmp_path):
    target = target_copy(tmp_path)
    run_dir = copy_run(tmp_path, "stopped", target)
    frozen = campaign_file.load(run_dir / rundir.CAMPAIGN)
    assert {p.kind for p in frozen.runners.values()} == {"demo"}  # normalised when loaded
    fingerprint = "sha256:deaf48e4d2594f23"  # the old release's fingerprint of the target
    assert json.loads((run_dir / "identity.json").read_text()) == campaign_file.identity_digest(
        frozen.identity_parts(fingerprint)
    )
    for old, new in [
        ("benchtui.ui.demo:DemoRunner", "demo"),
        ("runners.fake:FakeRunner", "fake"),
        ("runners.minisweagent:MiniSweRunner", "mini-swe-agent"),
        ("runners.command:CommandRunner", "command"),
        ("runners.minisweagent.ping:PingRunner", registry.PING),
        ("benchtui.runners.demo:DemoRunner", "demo"),
    ]:
        assert registry.canonical(old) == new
        assert registry.runner_class(old) is registry.runner_class(new)


@pytest.mark.parametrize("given", ["frozen", "new spelling"])
def test_resume_continues_an_old_stopped_run(tmp_path, given):
    target = target_copy(tmp_path)
    run_dir = copy_run(tmp_path, "stopped", target)
    argv = ["--no-ui", "--resume", "--state-dir", str(tmp_path / "runs"), "--runner", "quick"]
    if given == "new spelling":  # the campaign file as it reads after the move
        text = (FIXTURES / "stopped.toml").read_text().replace("benchtui.ui.demo:DemoRunner", "demo")
        path = tmp_path / "stopped.toml"
        path.write_text(text)
        assert 'kind = "demo"' in text
        argv = [str(path), *argv]
    done = subprocess.run(
        [sys.executable, "-m", "benchtui", *argv], capture_output=True, text=True, timeout=120, cwd=tmp_path
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "5 of 6 sessions to run" in done.stdout
    lines = (run_dir / "sessions.jsonl").read_text().splitlines()
    ends = [rec for rec in map(json.loads, lines) if "state" in rec]  # session lines (not holds, details)
    assert sum(1 for e in ends if e["state"] == "done") == 6
    assert len({e["session"] for e in ends if e["state"] == "done"}) == 6  # nothing twice (F7)
