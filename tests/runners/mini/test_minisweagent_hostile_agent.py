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


@pytest.mark.trio
async def test_what_a_command_prints_reaches_the_model_inert(tmp_path):
    # Before: C1 controls (U+0085 NEL, U+009F APC...) and bidi overrides reached the model as printed;
    # only C0 and DEL were taken out. Tabs and newlines are the output: they stay.
    printed = r"printf 'A\302\205B\342\200\256C\tD\177E\302\237F\n\tindented\342\201\246\n'"
    with ScriptedLLM([Reply(printed), Reply(SUBMIT)]) as llm:
        path = write_campaign(tmp_path, llm.url)
        with trio.fail_after(60):
            prep, _ = await run_campaign(path, tmp_path / "runs")
    seen = llm.requests[1].messages[-1]["content"]
    assert "ABC\tDEF\n\tindented\n" in seen, seen
    assert not [c for c in seen if (ord(c) < 32 and c not in "\t\n") or 0x7F <= ord(c) < 0xA0]
    assert not [
        c
        for c in seen
        if c in "\u061c\u200e\u200f" or 0x202A <= ord(c) <= 0x202E or 0x2066 <= ord(c) <= 0x2069
    ]
    assert journal(prep.run_dir)  # the session ran to its end
