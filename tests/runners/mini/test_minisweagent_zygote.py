"""The pre-warmed zygote lives as long as the Trio run, whatever Trio does with its threads."""

from __future__ import annotations

import pytest
import trio
import trio._core._thread_cache as thread_cache

from benchtui.runners.kit import secrets as keys
from benchtui.runners.mini import forkserver


@pytest.mark.trio
async def test_the_zygote_outlives_the_thread_that_started_it(monkeypatch):
    # Trio retires a worker thread after IDLE_TIMEOUT (10 s) idle, and the zygote dies with its
    # parent *thread* (PR_SET_PDEATHSIG): forked from such a thread, it vanished mid-campaign and
    # took the session requests it had queued with it (issue 15, item 9).
    monkeypatch.setattr(thread_cache, "IDLE_TIMEOUT", 1.0)  # past the zygote's prctl, before it is ready
    with trio.fail_after(120):
        async with trio.open_nursery() as nursery:
            server = forkserver.Forkserver(nursery)
            zygote = await server._ready(keys.public_environment(), startup_timeout=100)
            await trio.sleep(1.5)  # every idle worker thread has been retired by now
            assert not zygote.dead, zygote.error
            nursery.cancel_scope.cancel()
    assert zygote.dead  # and it ends with the nursery that owns it


@pytest.mark.trio
async def test_a_large_environment_still_reaches_the_worker(tmp_path, monkeypatch):
    # The request carries the engine's environment; a SEQPACKET message must fit the sender's
    # buffer (212,992 bytes by default), so every session failed with EMSGSIZE.
    from support.mini import journal, pred_on_path, run_campaign, write_campaign
    from support.scripted_llm import SUBMIT, Reply, ScriptedLLM

    pred_on_path(tmp_path, monkeypatch)
    monkeypatch.setenv("SCRIPTED_API_KEY", "sk-test-scripted-0000")
    for i in range(5):  # 500 kB in all (one variable may hold at most 128 kB)
        monkeypatch.setenv(f"BENCHTUI_TEST_LARGE_{i}", "x" * 100_000)
    with ScriptedLLM([Reply("echo $BENCHTUI_TEST_LARGE_4 | wc -c"), Reply(SUBMIT)]) as llm:
        path = write_campaign(tmp_path, llm.url)
        with trio.fail_after(120):
            prep, _ = await run_campaign(path, tmp_path / "runs")
    (record,) = journal(prep.run_dir).values()
    assert (record["state"], record["reason"]) == ("done", "submitted without a certificate"), record[
        "reason"
    ]
    assert "100001" in llm.requests[1].messages[-1]["content"]
