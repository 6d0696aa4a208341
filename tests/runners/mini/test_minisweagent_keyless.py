"""A model without `api_key_env`: against an `api_base` it is a keyless server (a local model) and
works; with neither, the provider's SDK refuses before it sends anything, which costs nothing."""

from __future__ import annotations

import tomllib

import pytest
import tomli_w
import trio
from support.mini import journal, pred_on_path, run_campaign, write_campaign
from support.scripted_llm import SUBMIT, Reply, ScriptedLLM

from benchtui.engine.breaker import infra_kind
from benchtui.engine.records import JournalRecord
from benchtui.runners.mini.ping import CLIENT_REFUSED, KEYLESS


@pytest.fixture(autouse=True)
def _env(tmp_path, monkeypatch):
    pred_on_path(tmp_path, monkeypatch)
    for name in ("OPENAI_API_KEY", "SCRIPTED_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)  # no ./.env


def without_keys(path, *, api_base: bool = True) -> None:
    doc = tomllib.loads(path.read_text())
    for model in doc["models"]:
        del model["api_key_env"]
        if not api_base:
            del model["api_base"]
    path.write_text(tomli_w.dumps(doc))


@pytest.mark.trio
async def test_a_local_server_without_a_key_needs_no_api_key_env(tmp_path):
    with ScriptedLLM([Reply("ls", 300, 20), Reply(SUBMIT, 400, 10)]) as llm:
        path = write_campaign(tmp_path, llm.url)
        without_keys(path)
        with trio.fail_after(60):
            prep, _ = await run_campaign(path, tmp_path / "runs")
    (record,) = journal(prep.run_dir).values()
    assert (record["state"], record["result"]) == ("done", "no_certificate"), record["reason"]
    assert {r.headers["authorization"] for r in llm.requests} == {f"Bearer {KEYLESS}"}


@pytest.mark.trio
async def test_a_call_the_sdk_refuses_to_send_is_charged_nothing(tmp_path):
    """No key anywhere and no api_base: the OpenAI SDK will not build the request ("Missing
    credentials"); nothing left the machine, so nothing is charged (it was its worst case)."""
    path = write_campaign(tmp_path, "http://127.0.0.1:9/v1", runner={"retries": 0})
    without_keys(path, api_base=False)
    with trio.fail_after(60):
        prep, _ = await run_campaign(path, tmp_path / "runs")
    (record,) = journal(prep.run_dir).values()
    assert record["state"] == "error" and record["retryable"]
    assert "Missing credentials" in record["reason"] or "api_key" in record["reason"], record["reason"]
    assert record["cost_usd"] == 0


@pytest.mark.trio
async def test_a_refusal_before_sending_is_the_clients_never_retried_nor_a_5xx(tmp_path):
    """litellm words the SDK's refusal "InternalServerError": it is neither the server's nor
    worth a retry (each would be refused the same way)."""
    path = write_campaign(tmp_path, "http://127.0.0.1:9/v1", runner={"retries": 3, "retry_backoff_s": 5})
    without_keys(path, api_base=False)
    with trio.fail_after(60):
        prep, _ = await run_campaign(path, tmp_path / "runs")
    (record,) = journal(prep.run_dir).values()
    assert record["reason"].startswith(f"{CLIENT_REFUSED} (nothing sent, nothing charged): "), record[
        "reason"
    ]
    assert "InternalServerError" not in record["reason"]
    assert record["cost_usd"] == 0 and record["calls"] == 1  # each retry would be authorised anew
    kind = infra_kind(JournalRecord.from_json(record))
    assert kind is not None and kind.startswith("the client refused"), kind
