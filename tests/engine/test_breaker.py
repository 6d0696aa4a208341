"""The circuit breaker: a model whose sessions keep ending in the same infrastructure error gets
no more launches in this run (the others go on); its unlaunched sessions stay pending, never
"error", and `--resume` runs them."""

from __future__ import annotations

import pytest
import trio
from support import Recorder, last_states, start, write_campaign

from benchtui.cli.main import exit_code
from benchtui.engine import events as ev
from benchtui.engine import run as engine
from benchtui.engine.breaker import TRIP_AFTER, Breaker, infra_kind
from benchtui.engine.records import JournalRecord

DOWN = "fake/model-a"


def outage(tmp_path, *, sessions=8, parallelism=1, **profile):
    lines = "".join(
        f"{k} = {v!r}\n".replace("True", "true").replace("False", "false") for k, v in profile.items()
    )
    write_campaign(
        tmp_path,
        sessions=sessions,
        total="10",
        per_session="0.05",
        parallelism=parallelism,
        extra_runners=f'[runners.stub]\nkind = "support.stub_runners:Outage"\ndown = ["{DOWN}"]\n{lines}',
    )
    text = (tmp_path / "t.toml").read_text()
    text = text.replace(f'name = "{DOWN}"\n', f'name = "{DOWN}"\napi_base = "http://127.0.0.1:9/v1"\n')
    (tmp_path / "t.toml").write_text(text)
    return engine.prepare(engine.Options(tmp_path / "t.toml", tmp_path / "runs", runner="stub"))


async def run_to_end(prep):
    rec = Recorder()
    async with trio.open_nursery() as nursery:
        _, result = await start(prep, nursery, rec)
    return rec, result


@pytest.mark.trio
async def test_a_model_whose_provider_is_down_stops_launching_after_three_and_the_others_go_on(tmp_path):
    prep = outage(tmp_path)
    rec, result = await run_to_end(prep)
    last = last_states(prep.run_dir)
    down = [r for r in last.values() if r["model"] == DOWN]
    assert [r["state"] for r in down] == ["error"] * TRIP_AFTER  # the rest never launched: no line
    assert all(r["state"] == "done" for r in last.values() if r["model"] != DOWN)
    assert sum(r["model"] != DOWN for r in last.values()) == 8
    # Said once, naming the model, the kind and the URL.
    said = [n.message for n in rec.of(ev.Notice) if "in a row" in n.message]
    assert len(said) == 1
    assert DOWN in said[0] and "connection refused" in said[0] and "http://127.0.0.1:9/v1" in said[0]
    (ended,) = rec.of(ev.CampaignEnded)
    assert result["finished"] is False and ended.retry == 8 and exit_code(ended) == 75
    assert "5 not launched" in ended.message and "--resume" in ended.message


@pytest.mark.trio
async def test_sessions_never_launched_stay_pending_and_resume_runs_them(tmp_path):
    prep = outage(tmp_path)
    await run_to_end(prep)
    prep.lock.release()
    # The provider is back (here: the fake runner, whose calls succeed; the runner is free to change).
    again = engine.prepare(engine.Options(tmp_path / "t.toml", tmp_path / "runs", resume=True, runner="fake"))
    assert len(again.checkpoint.pending(again.plan)) == 8  # 3 errors retried + 5 never launched
    _, result = await run_to_end(again)
    assert result["finished"] is True
    assert all(r["state"] == "done" for r in last_states(again.run_dir).values())


@pytest.mark.trio
async def test_a_breaker_tripped_while_sessions_wait_holds_them_at_parallelism(tmp_path):
    # Four at once: the model's later sessions are queued or waiting for a slot when it trips.
    prep = outage(tmp_path, sessions=12, parallelism=4)
    rec, _ = await run_to_end(prep)
    last = last_states(prep.run_dir)
    down = [r for r in last.values() if r["model"] == DOWN]
    assert TRIP_AFTER <= len(down) < 12 and all(r["state"] == "error" for r in down)
    assert sum(r["state"] == "done" for r in last.values()) == 12


@pytest.mark.trio
async def test_errors_of_different_kinds_never_trip_it(tmp_path):
    prep = outage(tmp_path, flaky=True)
    rec, _ = await run_to_end(prep)
    down = [r for r in last_states(prep.run_dir).values() if r["model"] == DOWN]
    assert len(down) == 8  # alternating causes: no streak of one kind, every session ran
    assert not [n for n in rec.of(ev.Notice) if "in a row" in n.message]


def end(model="m", state="error", reason="", retryable=True) -> JournalRecord:
    return JournalRecord(
        session="s",
        model=model,
        index=0,
        task=None,
        state=state,
        attempt=1,
        runner="r",
        reason=reason,
        retryable=retryable,
    )


@pytest.mark.parametrize(
    ("reason", "kind"),
    [
        ("model API failed (3 requests): APIConnectionError: [Errno 111] Connection refused", "refused"),
        ("litellm.APIConnectionError: [Errno -2] Name or service not known", "DNS"),
        ("model API failed (1 request): AuthenticationError: Error code: 401", "401/403"),
        ("model API failed (1 request): PermissionDeniedError: 403 Forbidden", "401/403"),
        ("model API failed (4 requests): InternalServerError: Error code: 503", "5xx"),
        ("API key variable OPENAI_API_KEY is not set", "key variable"),
        (  # litellm's wording of a refusal, with the cause the mini worker adds
            "model API failed (2 requests): InternalServerError: litellm.InternalServerError: "
            "InternalServerError: OpenAIException - Connection error. (cause: ConnectionRefusedError: "
            "[Errno 111] Connection refused)",
            "refused",
        ),
        (
            "model API failed (2 requests): InternalServerError: OpenAIException - Connection error.",
            "connect",
        ),
        ("worker failed: MemoryError", None),
        ("interrupted: campaign stopped", None),
        ("wall-clock limit of 1500 s reached", None),
    ],
)
def test_the_kind_is_read_from_the_reason(reason, kind):
    found = infra_kind(end(reason=reason))
    assert (found is None) if kind is None else (found is not None and kind in found)


def test_a_success_or_a_model_outcome_resets_the_streak():
    breaker = Breaker()
    refused = end(reason="Connection refused")
    for record in [refused, refused, end(state="done", retryable=False), refused, refused]:
        assert breaker.ended(record) is None
    assert breaker.ended(refused) is not None and "m" in breaker.tripped
    # A model-caused error with the same words (not retryable) is the model's outcome: no count.
    other = Breaker()
    for _ in range(5):
        assert other.ended(end(reason="Connection refused", retryable=False)) is None
