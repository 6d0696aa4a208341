"""The pre-warmed zygote lives as long as the Trio run, whatever Trio does with its threads."""

from __future__ import annotations

import pytest
import trio
import trio._core._thread_cache as thread_cache

from runners.minisweagent import forkserver, keys


@pytest.mark.trio
async def test_the_zygote_outlives_the_thread_that_started_it(monkeypatch):
    # Trio retires a worker thread after IDLE_TIMEOUT (10 s) idle, and the zygote dies with its
    # parent *thread* (PR_SET_PDEATHSIG): forked from such a thread, it vanished mid-campaign and
    # took the session requests it had queued with it (issue 15, item 9).
    monkeypatch.setattr(thread_cache, "IDLE_TIMEOUT", 1.0)  # past the zygote's prctl, before it is ready
    with trio.fail_after(120):
        zygote = await forkserver._ready(keys.public_environment(), startup_timeout=100)
        await trio.sleep(1.5)  # every idle worker thread has been retired by now
    assert not zygote.dead, zygote.error
