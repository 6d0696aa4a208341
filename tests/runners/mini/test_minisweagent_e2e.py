"""A real mini-swe-agent loop, end to end through the engine, against a scripted model server.

Real HTTP through litellm, real commands in the session's copy of the target, a real
certificate verified with the stand-in `pred`; nothing calls a real model API.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib
from pathlib import Path

import jsonschema
import pytest
import trio
from support import results_schema
from support.mini import (
    FIND_BUG,
    RULE,
    STAND_IN_PRED,
    journal,
    outcome_rows,
    pred_on_path,
    price,
    run_campaign,
    write_campaign,
)
from support.scripted_llm import ScriptedLLM


@pytest.fixture(autouse=True)
def _env(tmp_path, monkeypatch):
    pred_on_path(tmp_path, monkeypatch)
    monkeypatch.setenv("SCRIPTED_API_KEY", "sk-test-scripted-0000")


@pytest.mark.trio
async def test_an_agent_finds_a_bug_and_the_ledger_charges_exactly_its_usage(tmp_path):
    for sandbox in ("local", "bubblewrap"):  # one Trio run: both share the pre-warmed zygote
        await finds_a_bug(tmp_path / sandbox, sandbox)


async def finds_a_bug(tmp_path, sandbox):
    tmp_path.mkdir()
    with ScriptedLLM(FIND_BUG) as llm:
        path = write_campaign(tmp_path, llm.url, runner={"environment": sandbox, "keep_workdir": True})
        with trio.fail_after(60):
            prep, _ = await run_campaign(path, tmp_path / "runs")
    run_dir = prep.run_dir
    (record,) = journal(run_dir).values()
    assert (record["state"], record["result"]) == ("done", "bug_found"), (sandbox, record)
    assert record["calls"] == len(FIND_BUG)

    expected = sum((price(r.prompt_tokens, r.completion_tokens) for r in FIND_BUG), start=price(0, 0))
    ledger = tomllib.loads((run_dir / "ledger.toml").read_text())
    assert ledger["totals"]["spent_usd"] == float(expected)
    assert ledger["models"]["openai/scripted-a"]["spent_usd"] == float(expected)
    assert record["cost_usd"] == float(expected)
    assert all(r.body["max_tokens"] == 1000 for r in llm.requests)  # the bound authorised is the bound sent

    (row,) = outcome_rows(run_dir)
    assert row["certificate"]["rule"] == RULE
    assert row["verify_details"]["status"] == "accepted"
    results = json.loads((run_dir / "results" / "openai_scripted-a.json").read_text())
    jsonschema.validate(results, results_schema())
    assert results["bugs_found"] == 1 and results["results"][0]["result"] == "bug_found"
    session_dir = run_dir / "sessions" / record["session"]
    trajectory = json.loads((session_dir / "attempt-1.traj.json").read_text())
    assert trajectory["trajectory_format"].startswith("mini-swe-agent")
    assert trajectory["info"]["exit_status"] == "Submitted"
    # The commands ran in the session's private copy, not in the target.
    assert (session_dir / "workdir" / "bundle.json").exists()
    assert not (prep.campaign.environment.path / "bundle.json").exists()
    if sandbox == "local":
        verify_reads_every_file(run_dir, session_dir)


def verify_reads_every_file(run_dir: Path, session_dir: Path) -> None:
    """`benchtui verify` finds the one certificate in each file benchtui wrote that holds it, and
    calls every other file it wrote unreadable input (exit 2), never a rejected certificate."""
    written = [
        p
        for p in sorted(run_dir.rglob("*"))
        if p.is_file() and not {"workdir", "bin"} & set(p.relative_to(run_dir).parts)
    ]
    holding = {
        session_dir / "attempt-1.traj.json",
        session_dir / "attempt-1.certificates.json",
        run_dir / "outcomes" / "openai_scripted-a.jsonl",
        run_dir / "results" / "openai_scripted-a.json",
        run_dir / "sessions.jsonl",  # the journal: the details line ahead of the session's end
    }
    assert holding <= set(written)
    for path in written:
        done = subprocess.run(
            [sys.executable, "-m", "benchtui", "verify", str(path), "--pred", str(STAND_IN_PRED), "--json"],
            capture_output=True,
            text=True,
            timeout=60,
        )
        if path in holding:
            assert done.returncode == 0, (path, done.stdout, done.stderr)
            assert [json.loads(line)["status"] for line in done.stdout.splitlines()] == ["accepted"], path
        else:
            assert done.returncode == 2, (path, done.returncode, done.stdout, done.stderr)
            assert "no certificate" in done.stderr and "Traceback" not in done.stderr, path
