"""F5 / F6 with the real runner: per-call authorisation, exact charges, bounded retries."""

from __future__ import annotations

import threading
import tomllib

import pytest
import trio
from support.mini import journal, pred_on_path, run_campaign, write_campaign
from support.scripted_llm import SUBMIT, Reply, ScriptedLLM

WORST_CASE = 0.015  # output-only prices: 1000 tokens (max_output_tokens) x $15/Mtok


@pytest.fixture(autouse=True)
def _env(tmp_path, monkeypatch):
    pred_on_path(tmp_path, monkeypatch)
    monkeypatch.setenv("SCRIPTED_API_KEY", "sk-test-scripted-0000")


@pytest.mark.trio
async def test_a_budget_for_k_calls_buys_at_most_k_calls_and_is_never_exceeded(tmp_path):
    k, budget = 3, 3 * WORST_CASE + 0.01
    endless = ScriptedLLM(script=lambda request: Reply("echo still hunting", 500, 1000))
    with endless as llm:
        path = write_campaign(
            tmp_path,
            llm.url,
            budget={"per_session_usd": budget},
            model={"input_usd_per_mtok": 0.0, "output_usd_per_mtok": 15.0},
            runner={"step_limit": 20},
        )
        with trio.fail_after(60):
            prep, _ = await run_campaign(path, tmp_path / "runs")
    (record,) = journal(prep.run_dir).values()
    assert len(llm.requests) == k, record
    assert (record["result"], record["reason"]) == ("no_certificate", "budget_exhausted")
    assert record["ending"]["name"] == "budget_exhausted"
    assert record["calls"] == k
    assert record["cost_usd"] == pytest.approx(k * WORST_CASE) and record["cost_usd"] <= budget
    ledger = tomllib.loads((prep.run_dir / "ledger.toml").read_text())
    assert ledger["totals"]["spent_usd"] <= budget


@pytest.mark.trio
async def test_a_failing_api_is_retried_and_a_dead_one_is_an_infrastructure_error(tmp_path):
    lock, failed_once, outage = threading.Lock(), set(), [True]

    def script(request):
        if request.mentions("`down`") and outage[0]:
            return Reply(status=500)
        task = "slow" if request.mentions("`slow`") else "flaky"
        with lock:
            first = request.turn == 0 and task not in failed_once
            failed_once.add(task)
        if first:  # one 500 for `flaky`; one answer too late for the client's timeout for `slow`
            return Reply(status=500) if task == "flaky" else Reply("ls", 300, 30, delay_s=1.5)
        return Reply("ls", 300, 30) if request.turn == 0 else Reply(SUBMIT, 400, 10)

    with ScriptedLLM(script=script) as llm:
        path = write_campaign(
            tmp_path,
            llm.url,
            tasks=["flaky", "slow", "down"],
            runner={"retries": 1, "request_timeout_s": 0.5},
            parallelism=3,
        )
        with trio.fail_after(60):
            prep, _ = await run_campaign(path, tmp_path / "runs")
        records = {r["task"]: r for r in journal(prep.run_dir).values()}
        two_calls = (700 * 3 + 40 * 15) / 1e6

        flaky = [r.status for r in llm.requests if r.mentions("`flaky`")]
        assert flaky == [500, 200, 200]  # the 500 was retried, then the session went on
        assert (records["flaky"]["state"], records["flaky"]["result"]) == ("done", "no_certificate")
        assert records["flaky"]["calls"] == 3  # every attempt was authorised
        assert records["flaky"]["cost_usd"] == pytest.approx(two_calls)  # a failed attempt costs nothing

        assert len([r for r in llm.requests if r.mentions("`slow`")]) == 3  # the timed-out call was retried
        assert records["slow"]["result"] == "no_certificate"
        # ... and charged its worst case (it may have been billed): at least max_output_tokens x $15/Mtok.
        assert records["slow"]["cost_usd"] > two_calls + 1000 * 15 / 1e6

        down = [r.status for r in llm.requests if r.mentions("`down`")]
        assert down == [500, 500]  # retries = 1: bounded
        assert (records["down"]["state"], records["down"]["retryable"]) == ("error", True)
        assert records["down"]["reason"].startswith("model API failed (2 requests): ")
        assert records["down"]["ending"]["name"] == "provider_error"
        assert records["down"]["cost_usd"] == 0

        # The infrastructure error is retried on resume (the API is back); nothing else runs again.
        outage[0] = False
        before = len(llm.requests)
        with trio.fail_after(60):
            prep, _ = await run_campaign(path, tmp_path / "runs", resume=True)
        again = {r["task"]: r for r in journal(prep.run_dir).values()}
        assert (again["down"]["state"], again["down"]["attempt"]) == ("done", 2)
        assert len(llm.requests) > before and all(r.mentions("`down`") for r in llm.requests[before:])
        assert again["flaky"] == records["flaky"] and again["slow"] == records["slow"]
        assert (prep.run_dir / "sessions" / again["down"]["session"] / "attempt-2.traj.json").exists()
