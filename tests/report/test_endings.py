"""Every ending of the closed set (core/endings.py) comes out of a campaign and is shown by name
in the journal, the text report and the JSON report; the groups decide what is a trial."""

from __future__ import annotations

import pytest
import trio
from support import Recorder, journal, start, write_campaign
from support.stub_runners import ORDER

from benchtui.core.endings import ENDINGS, GROUP, MEANING, NOT_HUNTING
from benchtui.engine import events as ev
from benchtui.engine import run as engine
from benchtui.report import build
from benchtui.report.text import render

RUNNER = """
[runners.endings]
kind = "support.stub_runners:Endings"
wall_time_s = 1.5
"""


def test_the_scripted_runner_covers_the_closed_set():
    assert sorted(ORDER) == sorted(ENDINGS)


@pytest.mark.trio
async def test_every_ending_is_recorded_and_shown_by_name(tmp_path):
    path = write_campaign(
        tmp_path,
        sessions=len(ORDER),
        parallelism=1,
        models=("fake/model-a",),
        total="1",
        per_session="0.02",
        extra_runners=RUNNER,
        extra="stop_model_after_no_action = 0",  # five in a row could not act: no breaker here
    )
    path.write_text(path.read_text().replace('runner = "fake"', 'runner = "endings"'))
    recorder = Recorder()
    prep = engine.prepare(engine.Options(path, tmp_path / "runs"))
    with prep, trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            scheduler, result = await start(prep, nursery, recorder)
            for ending in ("killed", "interrupted"):  # each hangs until the test ends it
                session = f"fake_model-a-{ORDER.index(ending):04d}"
                await recorder.until(lambda s=session: s in scheduler.running_sessions())
                if ending == "killed":
                    scheduler.kill(session)
                else:
                    scheduler.stop(now=True)
    assert result["finished"] is False  # stopped now: the interrupted session is retried on resume
    lines = [e for e in journal(prep.run_dir) if "state" in e]
    ends = {e["index"]: e["ending"]["name"] for e in lines if e["state"] not in ("running", "pending")}
    assert [ends[i] for i in range(len(ORDER))] == list(ORDER)
    overspent = next(e for e in lines if e.get("ending", {}).get("name") == "overspent")
    assert "the server ignores max_tokens" in overspent["reason"]  # 20,000 output tokens for 1,000

    report = build([prep.run_dir])
    (model,) = report.to_json()["models"]
    assert model["endings"] == dict.fromkeys(ENDINGS, 1)
    assert model["not_hunting"] == len(NOT_HUNTING)
    infra = [e for e in ENDINGS if GROUP[e] == "infrastructure"]
    # Not trials: the infrastructure endings, and killed and wall_time here (no model answer before).
    assert model["infra_errors"] == len(infra) + 2
    text = render(report)
    section = text.split("Endings (", 1)[1]
    for ending in ENDINGS:
        assert f"{ending} ×1" in section and f"  {ending}: {MEANING[ending]}" in section, ending
    ended = [e for e in recorder.events if isinstance(e, ev.SessionEnded)]
    assert [e.ending for e in ended] == list(ORDER)
