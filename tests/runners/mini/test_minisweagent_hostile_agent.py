"""An agent as attacker: whatever the model makes its commands print is its own, final outcome.

A certificate nested 100,000 deep (RecursionError in the parser) or 45 one-megabyte certificates
(a report larger than the engine accepts) used to end the session as a *retryable* error, so every
--resume ran and paid for it again.
"""

from __future__ import annotations

import pytest
import trio
from support.mini import journal, outcome_rows, pred_on_path, run_campaign, write_campaign
from support.scripted_llm import SUBMIT, Reply, ScriptedLLM

DEEP = (
    "python3 -c \"print('CERTIFICATE_START'); print('[' * 100000 + ']' * 100000); print('CERTIFICATE_END')\""
)
MANY = (
    'python3 -c "import json\nfor i in range(45): '
    "print('CERTIFICATE_START'); print(json.dumps({'rule': 'R%d' % i, 'pad': 'x' * 999000})); "
    "print('CERTIFICATE_END')\""
)
HUGE = "python3 -c \"print('CERTIFICATE_START'); print('\\\\u00e9' * 2000000); print('CERTIFICATE_END')\""


@pytest.fixture(autouse=True)
def _env(tmp_path, monkeypatch):
    pred_on_path(tmp_path, monkeypatch)
    monkeypatch.setenv("SCRIPTED_API_KEY", "sk-test-scripted-0000")


@pytest.mark.trio
async def test_hostile_certificates_are_final_model_outcomes_never_retried(tmp_path):
    def script(request):
        command = next(
            c for t, c in (("`deep`", DEEP), ("`many`", MANY), ("`huge`", HUGE)) if request.mentions(t)
        )
        return Reply(command) if request.turn == 0 else Reply(SUBMIT)

    with ScriptedLLM(script=script) as llm:
        path = write_campaign(
            tmp_path,
            llm.url,
            tasks=["deep", "many", "huge"],
            parallelism=3,  # the whole output kept: the report's own bound is what is tested here
            runner={"command_output_bytes": 64 << 20, "trajectory_output_bytes": 128 << 20},
        )
        with trio.fail_after(120):
            prep, _ = await run_campaign(path, tmp_path / "runs")
        records = {r["task"]: r for r in journal(prep.run_dir).values()}
        assert {t: (r["state"], r["retryable"]) for t, r in records.items()} == dict.fromkeys(
            ("deep", "many", "huge"), ("done", False)
        ), records
        assert records["deep"]["result"] == "rejected"
        assert "nested deeper than 64 levels" in records["deep"]["reason"]
        assert "larger than 1,000,000 characters" in records["huge"]["reason"]
        checked = {row["session"]: row["verify_details"]["checked"] for row in outcome_rows(prep.run_dir)}
        assert len(checked[records["many"]["session"]]) == 5  # max_certificates, out of the 8 MiB kept
        calls = len(llm.requests)
        with trio.fail_after(60):  # a resume has nothing left to run, nothing to pay
            await run_campaign(path, tmp_path / "runs", resume=True)
        assert len(llm.requests) == calls


@pytest.mark.trio
async def test_commands_that_cannot_run_are_told_to_the_model_not_a_worker_crash(tmp_path):
    odd = [
        Reply(123),
        Reply(["ls", "-l"]),
        Reply(None),
        Reply("echo a\0b"),
        Reply("echo still here"),
        Reply(SUBMIT),
    ]
    for sandbox in ("local", "bubblewrap"):  # one Trio run: both share the pre-warmed zygote
        (tmp_path / sandbox).mkdir()
        with ScriptedLLM(odd) as llm:
            path = write_campaign(tmp_path / sandbox, llm.url, runner={"environment": sandbox})
            with trio.fail_after(60):
                prep, _ = await run_campaign(path, tmp_path / sandbox / "runs")
        (record,) = journal(prep.run_dir).values()
        assert (record["state"], record["reason"], record["calls"]) == (
            "done",
            "submitted without a certificate",
            len(odd),
        ), (sandbox, record)
        assert "still here" in llm.requests[-1].messages[-1]["content"]
