"""API keys are used, but no file benchtui writes ever contains one."""

from __future__ import annotations

import json

import pytest
import trio
from support.mini import journal, pred_on_path, run_campaign, write_campaign
from support.scripted_llm import SUBMIT, Reply, ScriptedLLM

KEY = "sk-FAKE-benchtui-secret-7f3a9c2e1d"
OTHER = "ghp_FAKE-other-token-5b8d0e4f"
SNOOP = "env; echo ---; tr '\\0' '\\n' < /proc/$PPID/environ; echo ---; cat ~/.env 2>/dev/null; echo done"


@pytest.mark.trio
async def test_no_file_under_the_run_dir_contains_a_key(tmp_path, monkeypatch):
    pred_on_path(tmp_path, monkeypatch)
    monkeypatch.setenv("SCRIPTED_API_KEY", KEY)
    monkeypatch.setenv("GITHUB_TOKEN", OTHER)
    for sandbox in ("local", "bubblewrap"):  # one Trio run: both share the pre-warmed zygote
        await snoop(tmp_path / sandbox, sandbox)


async def snoop(tmp_path, sandbox):
    tmp_path.mkdir()
    with ScriptedLLM([Reply(SNOOP), Reply(SUBMIT)]) as llm:
        path = write_campaign(tmp_path, llm.url, runner={"environment": sandbox, "keep_workdir": True})
        with trio.fail_after(60):
            prep, _ = await run_campaign(path, tmp_path / "runs")

    assert llm.requests[0].headers["authorization"] == f"Bearer {KEY}"  # the key was really used
    for request in llm.requests:  # ... and only there: the model never sees it
        assert KEY not in json.dumps(request.body) and OTHER not in json.dumps(request.body), sandbox
    (record,) = journal(prep.run_dir).values()
    assert record["state"] == "done"
    snooped = llm.requests[1].messages[3]["content"]  # what the agent's command printed
    assert "done" in snooped and ("SCRIPTED_API_KEY=" in snooped or sandbox == "bubblewrap")
    files = [p for p in prep.run_dir.rglob("*") if p.is_file()]
    assert len(files) > 5
    for path in files:
        data = path.read_bytes()
        assert KEY.encode() not in data and OTHER.encode() not in data, path
