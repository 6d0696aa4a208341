"""Run dirs written by earlier releases keep working.

The fixtures (tests/fixtures/rundirs/, see its README) were recorded with the release before the
move (0a81a35): a finished fake campaign and a demo campaign stopped by SIGINT after its first
session, whose frozen campaigns spell the demo runner `benchtui.ui.demo:DemoRunner`; and with the
release before targets became a plugin family (7c05ec7): two campaigns on `[target] kind = "none"`
stopped after two of their four sessions, `untargeted` (fake runners: claims) and `unverified` (a
command runner: certificates recorded unverified, their verdicts without a cause, verifier or
judge). `benchtui report` and `ctl status` read them without their target; `--resume` continues
the stopped ones (their identities, digested by the old releases, still match), from the frozen
campaign or from a campaign file that spells the kind the new way (`kind = "demo"`) — except a
command-runner run: its default prompt changed since (9b838da), and the prompt is part of the
identity (F2), so `--resume` refuses it, naming the runners.
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
from benchtui.engine import phases, rundir
from benchtui.engine.records import JournalRecord, Throttling

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
    for name in ("finished", "stopped", "untargeted", "unverified", "shortlisted"):
        assert (FIXTURES / name / "identity.json").is_file()
        assert not (FIXTURES / name / ".lock").exists()
    for name in ("untargeted", "unverified"):
        assert '[target]\nkind = "none"' in (FIXTURES / name / rundir.CAMPAIGN).read_text()
        assert json.loads((FIXTURES / name / "identity.json").read_text())["target"] == "30a0924a3360be68"
    old = json.loads((FIXTURES / "unverified" / "outcomes" / "acme_coder-xl.jsonl").read_text())
    assert old["verify_details"]["status"] == "unverified"
    assert not {"cause", "verifier", "judged_by"} & set(old["verify_details"])


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


def test_report_reads_old_runs_on_a_target_without_a_verifier(tmp_path, capsys):
    gone = tmp_path / "no-such-target"
    unverified = {m["model"]: m for m in _report(copy_run(tmp_path, "unverified", gone), capsys)["models"]}
    for name in ("acme/coder-xl", "acme/coder-mini"):
        # Its verdicts (no cause, verifier or judge then) read as unverified: nobody's bug.
        model = unverified[name]
        assert model["done"] == 1 and model["certificates"]["unverified"] == 1, model
        assert model["bugs"] == 0 and model["verified_bugs"] == 0
    claims = {m["model"]: m for m in _report(copy_run(tmp_path, "untargeted", gone), capsys)["models"]}
    assert claims["acme/coder-xl"]["certificates"]["claimed"] == 1
    assert claims["acme/coder-xl"]["bugs"] == 1 and claims["acme/coder-xl"]["verified_bugs"] == 0
    assert claims["acme/coder-mini"]["bugs"] == 0 and claims["acme/coder-mini"]["spent_usd"] == 0.02


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
    for name in ("untargeted", "unverified"):
        assert cli(["ctl", str(copy_run(tmp_path, name, gone)), "status"]) == 0
        out = capsys.readouterr().out
        assert "stopped, 2 of 4 sessions to run (not running)" in out and "2/4 sessions ended" in out, out


def test_old_kinds_resolve_and_digest_as_the_old_release_did(tmp_path):
    target = target_copy(tmp_path)
    run_dir = copy_run(tmp_path, "stopped", target)
    frozen = campaign_file.load(run_dir / rundir.CAMPAIGN)
    assert {p.kind for p in frozen.runners.values()} == {"demo"}  # normalised when loaded
    fingerprint = "sha256:deaf48e4d2594f23"  # the old release's fingerprint of the target
    assert json.loads((run_dir / "identity.json").read_text()) == campaign_file.identity_digest(
        frozen.identity_parts(fingerprint)
    )
    untargeted = copy_run(tmp_path, "untargeted", target)
    frozen = campaign_file.load(untargeted / rundir.CAMPAIGN)
    assert frozen.target.kind == "none" and {p.kind for p in frozen.runners.values()} == {"fake"}
    assert json.loads((untargeted / "identity.json").read_text()) == campaign_file.identity_digest(
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


def test_resume_continues_an_old_run_on_a_target_without_a_verifier(tmp_path):
    target = target_copy(tmp_path)
    run_dir = copy_run(tmp_path, "untargeted", target)
    done = resume(tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "2 of 4 sessions to run" in done.stdout
    lines = map(json.loads, (run_dir / "sessions.jsonl").read_text().splitlines())
    ends = [rec for rec in lines if "state" in rec]  # session lines (not flight or details lines)
    finished = [e for e in ends if e["state"] == "done"]
    assert len(finished) == 4 and len({e["session"] for e in finished}) == 4  # nothing twice (F7)
    # acme/coder-xl's scripted bugs (#0 before the stop, #1 now): claimed by the runner.
    assert sorted(e["session"] for e in finished if e["result"] == "bug_found") == [
        "acme_coder-xl-0000",
        "acme_coder-xl-0001",
    ]


def test_resume_refuses_an_old_command_run_whose_default_prompt_changed(tmp_path):
    run_dir = copy_run(tmp_path, "unverified", target_copy(tmp_path))
    before = (run_dir / "sessions.jsonl").read_text()
    done = resume(tmp_path)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.strip().splitlines() == [
        f"benchtui: cannot resume {run_dir}: changed since it started: runners (a campaign grows only by models and sessions; use --fresh to start over)"
    ]
    assert (run_dir / "sessions.jsonl").read_text() == before


def resume(tmp_path: Path, runner: str = "quick") -> subprocess.CompletedProcess[str]:
    argv = ["--no-ui", "--resume", "--state-dir", str(tmp_path / "runs"), "--runner", runner]
    return subprocess.run(
        [sys.executable, "-m", "benchtui", *argv], capture_output=True, text=True, timeout=120, cwd=tmp_path
    )


# -- a shortlist campaign's journal, before its protocol keys were typed (72809a4) -------------------
def test_an_old_shortlist_run_reports_as_it_did(tmp_path, capsys, monkeypatch):
    """The report of the recorded run, as 72809a4 printed it (text and JSON) with what the report
    gained since (endings and their columns, issue 34; date spans, issue 35; clustered intervals,
    power, best of N, issue 46; tokens by bucket and cache prices, issue 45: keys and lines added, none changed): the shortlists, their
    refusals, bugs@K and the throttling note read from the typed records as they were from the
    lines' untyped keys."""
    copy_run(tmp_path, "shortlisted", tmp_path / "no-such-target")
    monkeypatch.chdir(tmp_path)
    assert cli(["report", "runs/shortlisted", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out) == json.loads(
        (FIXTURES / "shortlisted.report.json").read_text()
    )
    assert cli(["report", "runs/shortlisted"]) == 0
    assert capsys.readouterr().out == (FIXTURES / "shortlisted.report.txt").read_text()


def test_every_line_of_an_old_shortlist_journal_reads_typed_and_writes_back_unchanged():
    lines = [
        json.loads(line) for line in (FIXTURES / "shortlisted" / "sessions.jsonl").read_text().splitlines()
    ]
    records = [JournalRecord.from_json(line) for line in lines if "session" in line and "details" not in line]
    for line, record in zip(
        [x for x in lines if "session" in x and "details" not in x], records, strict=True
    ):
        assert record.to_json() == line and record.extra == {}  # nothing left untyped
    triages = {r.model: r.phase for r in records if r.session.endswith("-triage") and r.state == "done"}
    a = triages["fake/model-a"]
    assert (
        isinstance(a, phases.Triage) and a.size == 3 and a.limits == {"model_calls": 8, "shell_actions": 12}
    )
    assert [e.rule for e in a.shortlist or ()] == ["R2 -> T2", "R5 -> T5", "R1 -> T1"]
    assert [(r.rule, r.position) for r in a.refused] == [("R9 -> T9", 2), ("R2 -> T2", 3), ("R4 -> T4", 6)]
    pending = [r.phase for r in records if r.state == "pending"]
    assert len(pending) == 4 and all(
        isinstance(p, phases.Episode) and "fragile" in p.hypothesis for p in pending
    )
    assert [r.throttling for r in records if r.throttling] == [Throttling(answers=2, wait_s=3.5)]


HOSTILE = [
    ("fake_model-a-triage", "shortlist", "garbage", "shortlist: not a list: 'garbage'"),
    ("fake_model-a-triage", "shortlist", [{"rule": 5}], "shortlist: an entry is not a rule"),
    ("fake_model-a-triage", "refused", 7, "refused: not a list: '7'"),
    (
        "fake_model-a-triage",
        "refused",
        [{"rule": "R1 -> T1", "position": -2}],
        "a refused entry's position: not a count",
    ),
    ("fake_model-a-triage", "shortlist_size", True, "shortlist_size: not a count: 'True'"),
    ("fake_model-a-triage", "triage_limits", {"model_calls": "8"}, "triage_limits.model_calls: not a count"),
    ("fake_model-a-triage", "phase", "review", "phase 'review' is neither triage nor episode"),
    ("fake_model-a-0001", "hypothesis", ["x"], "hypothesis: not a string"),
    ("fake_model-b-0000", "throttled", -1, "throttled: not a count: '-1'"),
    ("fake_model-b-0000", "throttle_wait_s", float("inf"), "throttle_wait_s: not a number of seconds: 'inf'"),
]


@pytest.mark.parametrize(
    ("session", "key", "value", "said"), HOSTILE, ids=[h[1] + "-" + str(h[2])[:12] for h in HOSTILE]
)
def test_a_hostile_protocol_or_throttling_value_is_one_line_and_nothing_is_written(
    tmp_path, capsys, session, key, value, said
):
    """An edited journal whose protocol or throttling value is not what the engine writes: the
    report, `ctl status` and `--resume` each refuse it in one line naming the line and the key
    (before: the report read garbage as no shortlist, a bool as a count), and change nothing."""
    run_dir = copy_run(tmp_path, "shortlisted", target_copy(tmp_path))
    journal = run_dir / "sessions.jsonl"
    lines = journal.read_text().splitlines()
    number = next(
        i
        for i, line in enumerate(lines, 1)
        if (d := json.loads(line)).get("session") == session
        and "details" not in d
        and d["state"] != "running"
    )
    lines[number - 1] = json.dumps({**json.loads(lines[number - 1]), key: value})
    journal.write_text("\n".join(lines) + "\n")
    before = files_of(run_dir)
    for argv in (["report", str(run_dir)], ["ctl", str(run_dir), "status"]):
        assert cli(argv) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and f"corrupted journal at line {number} ({said}" in err[0], err
    done = resume(tmp_path, runner="fake")
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and f"at line {number} ({said}" in done.stderr
    assert files_of(run_dir) == before


def files_of(run_dir: Path) -> dict[str, bytes]:
    """The run dir's files (not the lock a refused `--resume` took: a held lock, not data)."""
    return {p.name: p.read_bytes() for p in run_dir.iterdir() if p.is_file() and p.name != ".lock"}
