"""F1 / F2 with the real runner: every model gets the same prompt and a pristine, identical target."""

from __future__ import annotations

import json
import subprocess

import pytest
import trio
from support.mini import (
    journal,
    make_target,
    outcome_rows,
    pred_on_path,
    run_campaign,
    write_campaign,
)
from support.scripted_llm import SUBMIT, Reply, ScriptedLLM

VANDALISE = "cat README.md && echo vandalised >> README.md && rm -rf src && git status --short"


def git_target(tmp_path) -> str:
    target = make_target(tmp_path)
    for args in (
        ["init", "-q"],
        ["add", "-A"],
        ["-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-q", "-m", "target"],
    ):
        subprocess.run(["git", "-C", str(target), *args], check=True, capture_output=True)
    return subprocess.run(
        ["git", "-C", str(target), "rev-parse", "HEAD"], check=True, capture_output=True, text=True
    ).stdout.strip()


@pytest.mark.trio
async def test_two_models_get_identical_prompts_and_pristine_identical_copies(tmp_path, monkeypatch):
    pred_on_path(tmp_path, monkeypatch)
    monkeypatch.setenv("SCRIPTED_API_KEY", "sk-test-scripted-0000")
    commit = git_target(tmp_path)
    with ScriptedLLM([Reply(VANDALISE), Reply(SUBMIT)]) as llm:
        path = write_campaign(
            tmp_path, llm.url, models=("openai/scripted-a", "openai/scripted-b"), parallelism=1
        )
        with trio.fail_after(60):
            prep, _ = await run_campaign(path, tmp_path / "runs")

    first_turns = {r.model: r.messages[:2] for r in llm.requests if r.turn == 0}
    assert set(first_turns) == {"scripted-a", "scripted-b"}
    assert first_turns["scripted-a"] == first_turns["scripted-b"]  # byte-identical rendered prompt (F2)

    # Both agents saw the same untouched target, although the first one vandalised its copy (F1).
    observations = {r.model: r.messages[3]["content"] for r in llm.requests if r.turn == 1}
    assert observations["scripted-a"] == observations["scripted-b"]
    assert "vandalised" not in observations["scripted-b"]
    assert "problem-reductions (test stand-in)" in observations["scripted-b"]
    assert (prep.campaign.environment.path / "src").is_dir()
    assert "vandalised" not in (prep.campaign.environment.path / "README.md").read_text()

    rows = outcome_rows(prep.run_dir)
    assert len(rows) == 2
    assert rows[0]["prompt_sha256"] == rows[1]["prompt_sha256"] != ""
    assert rows[0]["environment"] == rows[1]["environment"] == prep.fingerprint
    assert prep.fingerprint.startswith(f"git:{commit} ") and "pred=pred 0.5.0-stand-in" in prep.fingerprint
    assert rows[0]["copy_fingerprint"] == rows[1]["copy_fingerprint"] == f"git:{commit}"
    assert {(r["state"], r["result"]) for r in journal(prep.run_dir).values()} == {("done", "no_certificate")}
    started = [json.loads(line) for line in (prep.run_dir / "sessions.jsonl").read_text().splitlines()]
    assert [r["environment"] for r in started if r.get("state") == "running"] == [prep.fingerprint] * 2
