"""A `command`-target campaign end to end: the campaign's own checker (tests/support/checker.py)
judges each certificate an agent submits (`submit FILE`, the verdict at once) or prints (judged
when the session ends) — confirmed on exit 0, rejected on 1, inconclusive on another status or a
timeout — and its verdicts reach the journal, the outcomes and the results; its version joins
the fingerprint (a changed one makes `--resume` refuse); its paths resolve against the campaign
file's folder; `benchtui verify --campaign` and `benchtui check` use it."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest
import tomli_w
import trio
from support import benchtui, campaign_toml
from support.checker import target_table, write_checker
from support.mini import RULE, journal, outcome_rows, pred_on_path, run_campaign
from support.processes import pids_matching
from support.real_parts import require_tools
from support.script_agent import agent_log, script_campaign
from support.scripted_upstream import ScriptedUpstream

CLAIMS = ("bug", "nobug", "crash", "slow")
# What each claim comes to: the session's result, the verdict's status and cause, its reason.
EXPECTED = {
    "bug": ("bug_found", "accepted", "violation", f"confirmed: {RULE} is buggy"),
    "nobug": ("rejected", "rejected", "no_violation", f"{RULE} holds on this instance"),
    "crash": (
        "rejected",
        "inconclusive",
        "tool_error",
        "inconclusive: the checker exited 3: the checker tripped over it",
    ),
    "slow": ("rejected", "inconclusive", "timeout", "inconclusive: the checker took longer than 3 s"),
}
# The agent's certificate: its claim is its model's name ($1), its rule the session's task.
CERTIFICATE = 'echo "{\\"rule\\": \\"' + RULE + '\\", \\"claim\\": \\"$1\\", \\"marker\\": \\"MARKER\\"}"'
SUBMIT = f"{CERTIFICATE} > cert.json; submit cert.json"
PRINT = f"echo CERTIFICATE_START; {CERTIFICATE}; echo CERTIFICATE_END"


@pytest.fixture
def agents(tmp_path, monkeypatch):
    require_tools("bwrap", "socat")  # the agents run in bubblewrap, behind socat
    pred_on_path(tmp_path, monkeypatch)  # the campaign's environment fingerprints a pred
    monkeypatch.setenv("SCRIPTED_API_KEY", "sk-scripted")


async def hunt(tmp_path: Path, script: str, marker: str) -> Path:
    """A campaign of one session per claim (the model's name), its agent running `script`."""
    write_checker(tmp_path)
    with ScriptedUpstream() as up:
        path = script_campaign(
            tmp_path,
            up.url,
            script.replace("MARKER", marker),
            models=tuple(f"openai/{claim}" for claim in CLAIMS),
            budget={"total_usd": 1.0, "per_session": {"submits": 2}},
            target=target_table(timeout_s=3),
        )
        with trio.fail_after(240):
            prep, _ = await run_campaign(path, tmp_path / "runs")
    return prep.run_dir


def check_verdicts(run_dir: Path) -> None:
    records = {r["model"].split("/")[1]: r for r in journal(run_dir).values()}
    details = {row["session"]: row for row in outcome_rows(run_dir)}
    for claim, (result, status, cause, reason) in EXPECTED.items():
        record = records[claim]
        assert (record["state"], record["result"]) == ("done", result), record
        verdict = details[record["session"]]["verify_details"]
        assert (verdict["status"], verdict["cause"], verdict["reason"]) == (status, cause, reason), verdict
        assert (
            verdict["verifier"].startswith("benchtui.targets.command") and verdict["judged_by"] == "verifier"
        )
        rows = json.loads((run_dir / "results" / f"openai_{claim}.json").read_text())["results"]
        assert [r["verify_details"]["cause"] for r in rows] == [cause]


@pytest.mark.trio
async def test_submit_gets_the_checkers_verdict_at_once(tmp_path, agents):
    marker = f"1000.{uuid.uuid4().int % 10**8}"
    run_dir = await hunt(tmp_path, SUBMIT, marker)
    check_verdicts(run_dir)
    for claim, (_, status, _, reason) in EXPECTED.items():
        session = next(r["session"] for r in journal(run_dir).values() if r["model"] == f"openai/{claim}")
        if status != "accepted":  # (an accepted submit stops the agent: its log may end before)
            said = agent_log(run_dir, session)
            assert f"REJECTED\n{reason}\n" in said, said
        evidence = [json.loads(line) for line in (run_dir / "sessions" / session / "evidence.jsonl").open()]
        assert [(e["verdict"], e["reason"]) for e in evidence if e["kind"] == "submit"] == [(status, reason)]
    assert pids_matching(f"sleep {marker}") == []  # the slow checker's children went with it


@pytest.mark.trio
async def test_printed_certificates_get_the_checkers_verdict_when_the_session_ends(tmp_path, agents):
    marker = f"1000.{uuid.uuid4().int % 10**8}"
    run_dir = await hunt(tmp_path, PRINT, marker)
    check_verdicts(run_dir)
    for record in journal(run_dir).values():
        checked = json.loads(
            (run_dir / "sessions" / record["session"] / "attempt-1.certificates.json").read_text()
        )
        assert [c["certificate"]["claim"] for c in checked] == [record["model"].split("/")[1]]
        lines = (run_dir / "sessions" / record["session"] / "evidence.jsonl").read_text().splitlines()
        units = [e for e in map(json.loads, lines) if e["kind"] == "submit"]
        assert [e["reason"] for e in units] == ["verified after the session"]  # its unit, not a submit
    assert pids_matching(f"sleep {marker}") == []


# -- the checker's version, its paths, and the front ends --------------------------------------------
def fake_campaign(folder: Path, **target: object) -> Path:
    """A fake-runner campaign checked by the command target (its certificates stay claims: the
    target's version still joins the fingerprint)."""
    write_checker(folder)
    text = campaign_toml(sessions=2, models=("fake/model-a",), total="1.0", per_session="0.1")
    (folder / "target").mkdir(exist_ok=True)
    (folder / "target" / "README").write_text("a stand-in target\n")
    path = folder / "campaign.toml"
    path.write_text(text + "\n" + tomli_w.dumps({"target": target_table(**target)}))
    return path


def test_the_checkers_version_joins_the_fingerprint_and_a_changed_one_refuses_resume(tmp_path):
    path = fake_campaign(tmp_path)
    started = benchtui("--no-ui", path, "--state-dir", tmp_path / "runs", cwd=tmp_path)
    assert started.returncode == 0, started.stderr
    run_dir = tmp_path / "runs" / "t"
    from support import journal as every_line

    started = [r for r in every_line(run_dir) if r["state"] == "running"]
    assert len(started) == 2 and all(r["environment"].endswith(" checker:checker_1.0") for r in started)
    again = benchtui("--no-ui", "--resume", "--state-dir", tmp_path / "runs", cwd=tmp_path)
    assert again.returncode == 0 and "0 of 2 sessions to run" in again.stdout, again.stderr
    (tmp_path / "version.txt").write_text("checker 1.1\n")
    before = (run_dir / "sessions.jsonl").read_text()
    refused = benchtui("--no-ui", "--resume", "--state-dir", tmp_path / "runs", cwd=tmp_path)
    (line,) = refused.stderr.strip().splitlines()
    assert refused.returncode == 2 and "changed since it started: environment" in line, refused.stderr
    assert (run_dir / "sessions.jsonl").read_text() == before


@pytest.mark.parametrize("workdir", ["default", "relative"])
def test_verify_uses_the_campaigns_checker_from_anywhere(tmp_path, workdir):
    folder = tmp_path / "campaign"
    if workdir == "default":  # the campaign file's folder
        fake_campaign(folder)
    else:  # a program relative to workdir, itself relative to the campaign file
        fake_campaign(folder, verify=["./check.sh", "{certificate}"], workdir="checks")
        write_checker(folder / "checks")
        script = folder / "checks" / "check.sh"
        script.write_text('#!/bin/sh\nexec python3 check.py "$1" < "$1"\n')
        script.chmod(0o755)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    for claim, code, said in [
        ("bug", 0, f"ACCEPTED: confirmed: {RULE} is buggy"),
        ("nobug", 1, f"REJECTED: {RULE} holds on this instance"),
        ("crash", 4, "INCONCLUSIVE: inconclusive: the checker exited 3: the checker tripped over it"),
    ]:
        cert = elsewhere / f"{claim}.json"
        cert.write_text(json.dumps({"rule": RULE, "claim": claim}))
        done = benchtui(
            "verify", cert, "--campaign", Path("..") / "campaign" / "campaign.toml", cwd=elsewhere
        )
        assert (done.returncode, done.stdout.strip()) == (code, said), done.stderr


def test_check_shows_the_checkers_checks(tmp_path):
    write_checker(tmp_path)
    agent = tmp_path / "agent.sh"
    agent.write_text("#!/bin/sh\necho no certificate\n")
    runner = f'\n[runners.cli]\nkind = "command"\nenvironment = "local"\nunsandboxed = true\ncommand = ["sh", "{agent}"]\n'
    text = campaign_toml(sessions=1, models=("fake/model-a",), extra_runners=runner, cost="0.01")
    text = text.replace('runner = "fake"', 'runner = "cli"', 1)
    (tmp_path / "target").mkdir()
    path = tmp_path / "cli.toml"
    path.write_text(text + "\n" + tomli_w.dumps({"target": target_table()}))
    done = benchtui("check", path, cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = {line.split("  ")[0]: line for line in done.stdout.splitlines()}
    assert "python3 check.py {certificate} in " + str(tmp_path) in lines["runner cli: checker"]
    assert lines["runner cli: checker version"].endswith("ok: checker 1.0")
    (tmp_path / "check.py").unlink()
    (tmp_path / "version.txt").unlink()
    missing = benchtui("check", path, cwd=tmp_path)
    assert missing.returncode == 2 and "runner cli: checker version" in missing.stdout
    assert "python3 check.py --version exited 2" in missing.stderr
