"""The living leaderboard, as a user runs it: month 1, models A and B on 10 tasks; month 2, model C
added to the same run on `--resume`. Real mini-swe-agent sessions against the scripted server,
through the `benchtui` command: A and B make no new model call (counted at the server), C's
sessions get the prompts, fingerprint and budget A's got, and the report ranks A, B and C with
paired tests and the date span of each."""

from __future__ import annotations

import json
import tomllib
from collections import Counter
from pathlib import Path

import pytest
import tomli_w
from support import benchtui, journal, last_states
from support.mini import FIND_BUG, RULE, outcome_rows, pred_on_path, write_campaign
from support.scripted_llm import SUBMIT, Reply, Request, ScriptedLLM

TASKS = [RULE, *(f"Task{i:02d}ToTarget" for i in range(1, 10))]
A, B, C = "openai/scripted-a", "openai/scripted-b", "openai/scripted-c"


@pytest.fixture(autouse=True)
def _env(tmp_path, monkeypatch):
    pred_on_path(tmp_path, monkeypatch)
    monkeypatch.setenv("SCRIPTED_API_KEY", "sk-test-scripted-0000")


def script(request: Request) -> Reply:
    """A and C find the planted bug of RULE (the stand-in pred confirms it); B never does; every
    other session submits at once."""
    finder = request.model.endswith(("scripted-a", "scripted-c"))
    if finder and request.mentions(f"`{RULE}`") and request.turn < len(FIND_BUG):
        return FIND_BUG[request.turn]
    return Reply(SUBMIT, 200, 10)


def month(path: Path, models: tuple[str, ...], total: float) -> None:
    doc = tomllib.loads(path.read_text())
    template = doc["models"][0]
    doc["models"] = [{**template, "name": name} for name in models]
    doc["budget"] = {"total_usd": total, "per_model_usd": 0.5, "per_session_usd": 0.05}
    path.write_text(tomli_w.dumps(doc))


def calls_by_model(llm: ScriptedLLM) -> Counter[str]:
    return Counter(r.model.rsplit("/", 1)[-1] for r in llm.answered)


def test_month_two_adds_a_model_to_the_run_and_the_board(tmp_path):
    with ScriptedLLM(script=script) as llm:
        path = write_campaign(tmp_path, llm.url, models=(A, B), tasks=TASKS, name="month", parallelism=4)
        month(path, (A, B), 1.0)
        first = benchtui(path.name, "--no-ui", cwd=tmp_path, timeout=600)
        assert first.returncode == 0, first.stdout + first.stderr
        run_dir = tmp_path / "runs" / "month"
        month1 = calls_by_model(llm)
        assert set(month1) == {"scripted-a", "scripted-b"}
        lines = (run_dir / "sessions.jsonl").read_bytes()

        # Run again by accident: the finished run is shown, nothing is called or spent.
        again = benchtui(path.name, "--no-ui", cwd=tmp_path, timeout=600)
        assert again.returncode == 0 and "nothing was run or spent" in again.stdout
        assert calls_by_model(llm) == month1

        # Month 2: C joins; the money is explicit (A's and B's caps stay $0.50, the total rises by C's).
        month(path, (A, B, C), 1.5)
        second = benchtui(path.name, "--no-ui", "--resume", cwd=tmp_path, timeout=600)
        assert second.returncode == 0, second.stdout + second.stderr
        assert "grew runs/month: models added: openai/scripted-c; total_usd $1.00 -> $1.50" in second.stdout
        month2 = calls_by_model(llm)
    assert month2["scripted-a"] == month1["scripted-a"] and month2["scripted-b"] == month1["scripted-b"]
    assert month2["scripted-c"] >= len(TASKS)
    assert (run_dir / "sessions.jsonl").read_bytes().startswith(lines)

    # C's sessions: A's prompt for each task, A's fingerprint, A's budget.
    states = last_states(run_dir)
    task = {s: r["task"] for s, r in states.items()}
    prompts: dict[str, dict[str, str]] = {}
    for row in outcome_rows(run_dir):
        model = states[row["session"]]["model"]
        prompts.setdefault(model, {})[task[row["session"]]] = row["prompt_sha256"]
    assert prompts[C] == prompts[A] and len(prompts[A]) == len(TASKS)
    starts = [r for r in journal(run_dir) if r["state"] == "running"]
    given = {m: {(r["environment"], r["reserved_usd"]) for r in starts if r["model"] == m} for m in (A, B, C)}
    assert given[C] == given[A] == given[B] and len(given[A]) == 1

    # The report: A, B and C, paired on the ten tasks, with the span of dates of each.
    done = benchtui("report", "runs/month", "--format", "json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    by_model = {m["model"]: m for m in report["models"]}
    assert set(by_model) == {A, B, C}
    assert (
        by_model[A]["verified_bugs"] == by_model[C]["verified_bugs"] == 1
        and by_model[B]["verified_bugs"] == 0
    )
    assert {c["test"] for c in report["comparisons"]} == {"mcnemar_exact"}
    assert {c["pairs"] for c in report["comparisons"]} == {len(TASKS)}
    audit = {m["model"]: m for m in report["fairness"]["models"]}
    assert report["fairness"]["fair"] is True, report["fairness"]["findings"]
    assert audit[C]["joined"] and not audit[A]["joined"]
    assert audit[A]["dates"]["first"] <= audit[A]["dates"]["last"] <= audit[C]["dates"]["first"]
    text = benchtui("report", "runs/month", cwd=tmp_path).stdout
    assert f"{C}: price" in text and "joined by an extension" in text
