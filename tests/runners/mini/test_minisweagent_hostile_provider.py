"""A hostile provider never makes a served call cheaper than its worst case, and never hangs a session.

Whenever the provider may have served (and billed) a call whose usage is missing, partial,
negative or unreadable, the call is charged the worst case authorised for it, and the session's
details say why. A call has a total deadline, not only a per-read one.
"""

from __future__ import annotations

import threading

import pytest
import trio
from support.mini import journal, outcome_rows, pred_on_path, run_campaign, write_campaign
from support.scripted_llm import SUBMIT, Reply, ScriptedLLM

WORST = 1000 * 15 / 1e6  # input is free below: the worst case is max_output_tokens at $15/Mtok
CALL = 20 * 15 / 1e6  # a well-behaved scripted call: 20 output tokens
SERVED_BADLY = {
    "no-usage": Reply("ls", usage=None),
    "empty-usage": Reply("ls", usage={}),
    "zero-usage": Reply("ls", usage={"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}),
    "negative": Reply("ls", usage={"prompt_tokens": -500, "completion_tokens": -20, "total_tokens": -520}),
    "no-completion": Reply("ls", usage={"prompt_tokens": 100, "total_tokens": 100}),
    "no-prompt": Reply("ls", usage={"completion_tokens": 20, "total_tokens": 20}),
}
FAILED_BUT_SERVED = {  # the first attempt only; the retry is answered properly
    "not-json": Reply(body=b"<html>upstream hiccup</html>"),
    "string-usage": Reply("ls", usage={"prompt_tokens": "100", "completion_tokens": "x"}),
    "drip": Reply("ls", drip_s=0.2),  # ~700 bytes: over two minutes, one byte at a time
}


@pytest.fixture(autouse=True)
def _env(tmp_path, monkeypatch):
    pred_on_path(tmp_path, monkeypatch)
    monkeypatch.setenv("SCRIPTED_API_KEY", "sk-test-scripted-0000")


@pytest.mark.trio
async def test_a_served_call_without_trustworthy_usage_is_charged_its_worst_case(tmp_path):
    lock, failed_once = threading.Lock(), set()

    def script(request):
        task = next(t for t in [*SERVED_BADLY, *FAILED_BUT_SERVED, "refused"] if request.mentions(f"`{t}`"))
        if request.turn > 0:
            return Reply(SUBMIT)
        if task in SERVED_BADLY:
            return SERVED_BADLY[task]
        with lock:
            first = task not in failed_once
            failed_once.add(task)
        if not first:
            return Reply("ls")
        return Reply(status=503) if task == "refused" else FAILED_BUT_SERVED[task]

    tasks = [*SERVED_BADLY, *FAILED_BUT_SERVED, "refused"]
    with ScriptedLLM(script=script) as llm:
        path = write_campaign(
            tmp_path,
            llm.url,
            tasks=tasks,
            parallelism=len(tasks),
            model={"input_usd_per_mtok": 0.0},
            runner={"request_timeout_s": 5, "retries": 1},
        )
        with trio.fail_after(90):  # the drip alone would run for minutes
            prep, _ = await run_campaign(path, tmp_path / "runs")
    records = {r["task"]: r for r in journal(prep.run_dir).values()}
    details = {row["session"]: row for row in outcome_rows(prep.run_dir)}
    for task in tasks:
        record = records[task]
        assert (record["state"], record["result"]) == ("done", "no_certificate"), record
        reasons = details[record["session"]].get("worst_case_reasons", [])
        if task == "refused":  # a 503 was not served: nothing to pay for it
            assert record["cost_usd"] == pytest.approx(2 * CALL) and reasons == []
        elif task in SERVED_BADLY:
            assert record["cost_usd"] == pytest.approx(WORST + CALL), task
            assert len(reasons) == 1 and ("usage" in reasons[0] or "tokens" in reasons[0]), (task, reasons)
        else:
            assert record["cost_usd"] == pytest.approx(WORST + 2 * CALL), task
            assert len(reasons) == 1, (task, reasons)
    assert "deadline" in details[records["drip"]["session"]]["worst_case_reasons"][0]
    assert "200" in details[records["not-json"]["session"]]["worst_case_reasons"][0]


def test_mini_profiles_have_a_wall_time_by_default():
    from benchtui.core import registry

    assert registry.validate_profile({"kind": "mini-swe-agent"}).wall_time_s == 3600


def test_an_unreadable_usage_report_is_charged_the_worst_case_it_was_authorised_for():
    from benchtui.core.contract import Usage
    from benchtui.runners.kit.toolgate.counting import Gate
    from benchtui.runners.kit.verdict import WorkerReport
    from benchtui.runners.mini.protocol import decode
    from benchtui.runners.mini.remote import RemoteWorker
    from benchtui.runners.mini.serving import WorkerSession

    class Meter:
        charged: list[Usage] = []

        def charge(self, usage, *, served=True):
            assert served  # an unreadable report may have been billed: its call counts
            self.charged.append(usage)

    report, meter = WorkerReport(max_output_tokens=1000, prompt_tokens=812), Meter()
    served = WorkerSession(meter, report, RemoteWorker(), Gate())  # type: ignore[arg-type]
    for message in (
        {"t": "usage", "input_tokens": -5, "output_tokens": 3},
        {"t": "usage", "input_tokens": 5},
        {"t": "usage", "input_tokens": "5", "output_tokens": 3},
        {"t": "usage", "input_tokens": True, "output_tokens": 3},
        {"t": "usage", "input_tokens": 5.5, "output_tokens": 3},
    ):
        served.settle(decode(message))
    served.settle(decode({"t": "usage", "input_tokens": 7, "output_tokens": 3}))
    # never clamped, never under: the hold, its prompt at the dearest prompt price
    assert meter.charged == [Usage(812, 1000, worst_case=True)] * 5 + [Usage(7, 3)]
    assert len(report.worst_case) == 5 and all("unreadable usage" in why for why in report.worst_case)
