"""A real mini-swe-agent session submits a certificate of a rule that panics on a valid instance
(no bundle) through `submit FILE` and sees ACCEPTED with the panic line: the scripted model
server, the tool gate's `submit`, the verifier against the 8df8ac04 build's recorded answers.

The session runs `local` (unsandboxed): the replaying pred reads `../shared/pred-transcripts/`,
which a bubblewrap sandbox does not show (the agent needs no pred here; the gate's verifier runs
on the host, as it does for a sandboxed session)."""

from __future__ import annotations

import json
import os

import pytest
import trio
from support.mini import journal, run_campaign, write_campaign
from support.scripted_llm import Reply, ScriptedLLM
from support.transcripts import public_certificate, replaying_pred

PROTOCOL = {"model_calls": 5, "shell_actions": 5, "submits": 2}


@pytest.fixture(autouse=True)
def _env(monkeypatch):
    monkeypatch.setenv("SCRIPTED_API_KEY", "sk-test-scripted-0000")


def written(name: str, cert: dict) -> str:
    return f"cat > {name} <<'EOF'\n{json.dumps(cert)}\nEOF\n"


@pytest.mark.trio
async def test_a_panic_certificate_submitted_in_a_session_is_accepted(tmp_path, monkeypatch):
    pred = replaying_pred(tmp_path / "path-bin", "8df8ac04")
    monkeypatch.setenv("PATH", f"{pred.parent}{os.pathsep}{os.environ['PATH']}")
    panic = public_certificate("steinertree_ilp.panic.json")
    no_panic = {**panic, "rule": "steinertreeingraphs_ilp"}  # a real rule, of another source
    steps = [
        Reply(written("other.json", no_panic) + "submit other.json"),
        Reply(written("cert.json", panic) + "submit cert.json"),
        Reply("echo never-run"),  # the session ended on ACCEPTED
    ]
    with ScriptedLLM(steps) as llm:
        path = write_campaign(tmp_path, llm.url, tasks=["steinertree_ilp"], budget={"per_session": PROTOCOL})
        with trio.fail_after(120):
            prep, _ = await run_campaign(path, tmp_path / "runs")
    seen = [str(m["content"]) for m in llm.requests[-1].messages[2:] if m["role"] != "assistant"]
    assert len(llm.requests) == 2
    refused = seen[0].split("<output>\n", 1)[1].splitlines()
    assert refused[0] == "REJECTED" and "not an instance of the rule's declared source" in refused[1]
    (end,) = journal(prep.run_dir).values()
    session = prep.run_dir / "sessions" / end["session"]
    trajectory = json.loads((session / "attempt-1.traj.json").read_text())
    last = [m for m in trajectory["messages"] if m["role"] == "tool"][-1]["content"]
    accepted = last.split("<output>\n", 1)[1].splitlines()
    assert accepted[0] == "ACCEPTED", last
    assert accepted[1].startswith("panics_on_valid_instance: pred reduce --to ILP/bool panicked at ")
    assert "src/rules/steinertree_ilp.rs:51:9" in accepted[1] and "(found by reduce)" in accepted[1]
    assert end["result"] == "bug_found" and end["counters"]["submits"] == 2
    checked = json.loads((session / "attempt-1.certificates.json").read_text())
    assert [c["verdict"]["status"] for c in checked] == ["rejected", "accepted"]
    assert checked[1]["verdict"]["cause"] == "violation"
    assert checked[1]["verdict"]["details"]["pred_cause"] == "panics_in_rule"
    assert checked[1]["certificate"] == panic


@pytest.mark.trio
async def test_a_panic_of_another_rule_submitted_is_off_task_and_scores_nothing(tmp_path, monkeypatch):
    """The public SteinerTree panic, submitted in a session whose task is knapsack_ilp: the
    verifier confirms it, the gate says off_task (REJECTED) as the judge says of a printed one."""
    pred = replaying_pred(tmp_path / "path-bin", "8df8ac04")
    monkeypatch.setenv("PATH", f"{pred.parent}{os.pathsep}{os.environ['PATH']}")
    steps = [
        Reply(written("cert.json", public_certificate("steinertree_ilp.panic.json")) + "submit cert.json"),
        Reply("echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"),
    ]
    with ScriptedLLM(steps) as llm:
        path = write_campaign(tmp_path, llm.url, tasks=["knapsack_ilp"], budget={"per_session": PROTOCOL})
        with trio.fail_after(120):
            prep, _ = await run_campaign(path, tmp_path / "runs")
    seen = [str(m["content"]) for m in llm.requests[-1].messages[2:] if m["role"] != "assistant"]
    answer = seen[0].split("<output>\n", 1)[1].splitlines()
    assert answer[0] == "REJECTED" and answer[1].startswith(
        "off_task: the certificate is for 'steinertree_ilp'"
    )
    (end,) = journal(prep.run_dir).values()
    assert end["result"] == "rejected" and end["counters"]["submits"] == 1
