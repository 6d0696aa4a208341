"""Logical budgets in a real mini-swe-agent loop: a scripted agent tries to exceed every counter,
in bubblewrap (the tool reachable only through the gate) and on the host."""

from __future__ import annotations

import json
import os
import tomllib
from pathlib import Path

import pytest
import trio
from support.mini import RULE, journal, pred_on_path, run_campaign, write_campaign
from support.scripted_llm import SUBMIT, Reply, ScriptedLLM

ROOT = Path(__file__).resolve().parents[3]

CERTIFICATE = (
    'printf \'CERTIFICATE_START\\n{"rule": "' + RULE + '", "violation": "suboptimal_extraction", '
    '"source": %s, "bundle": %s, "target_config": "0,1,0", "note": "%s"}\\nCERTIFICATE_END\\n\' '
    '"$(cat source.json)" "$(cat bundle.json)"'
)
GREEDY = [
    Reply(  # pred: 3, pred solve: 1
        "pred create MIS --graph 0-1,1-2 -o source.json && "
        "pred reduce source.json --to MinimumVertexCover --json > bundle.json && "
        "pred solve bundle.json --solver brute-force --json"
    ),
    # Two certificates, one submit: the first (malformed) is verified and rejected, the second not.
    Reply(f"printf 'CERTIFICATE_START\\nnot json\\nCERTIFICATE_END\\n'; {CERTIFICATE} second"),
    Reply("for i in 1 2 3; do pred solve bundle.json --solver brute-force --json >/dev/null; done"),
    Reply("for i in 1 2 3 4 5; do pred --version; done"),
    Reply("python3 -c \"print('x' * 5000)\""),
    Reply("ls /opt/benchtui/bin; command -v pred"),
    Reply("echo one-more"),  # the seventh shell action: refused
    Reply(SUBMIT),  # the eighth model call: ends the session, never counted as a shell action
]
LIMITS = {
    "model_calls": 8,
    "shell_actions": 6,
    "submits": 1,
    "observation_chars": 400,
    "tools": {"pred": 8, "pred solve": 3},
}


@pytest.fixture(autouse=True)
def _env(monkeypatch):
    monkeypatch.setenv("SCRIPTED_API_KEY", "sk-test-scripted-0000")


def observations(llm: ScriptedLLM) -> list[str]:
    """What the model was shown after each of its actions, in order (from its last request)."""
    return [str(m["content"]) for m in llm.requests[-1].messages[2:] if m["role"] != "assistant"]


@pytest.mark.trio
async def test_a_scripted_agent_is_stopped_at_exactly_every_limit(tmp_path, monkeypatch):
    pred_on_path(tmp_path, monkeypatch)  # the stand-in: its planted bug gets a certificate accepted
    for sandbox in ("bubblewrap", "local"):  # one Trio run: both share the pre-warmed zygote
        await greedy_agent(tmp_path / sandbox, sandbox)


async def greedy_agent(tmp_path, sandbox):
    tmp_path.mkdir()
    with ScriptedLLM(GREEDY) as llm:
        path = write_campaign(
            tmp_path, llm.url, runner={"environment": sandbox}, budget={"per_session": LIMITS}
        )
        with trio.fail_after(90):
            prep, _ = await run_campaign(path, tmp_path / "runs")
    (end,) = journal(prep.run_dir).values()
    assert end["state"] == "done", end
    assert end["counters"] == {
        "model_calls": 8,
        "shell_actions": 6,
        "submits": 1,
        "tools": {"pred": 8, "pred solve": 3},
    }, sandbox
    assert sorted(end["exhausted"]) == ["shell_actions", "submits", "tools.pred", "tools.pred solve"]
    assert len(llm.requests) == 8
    assert (  # the prompt states the budget (the same text for every model)
        "This session's budget, the same for every model: 8 model calls (replies); 6 shell commands; "
        "8 `pred` calls; 3 `pred solve` calls; 1 certificates verified (check one now with `submit FILE`"
    ) in " ".join(llm.requests[0].messages[1]["content"].split())
    seen = observations(llm)
    assert seen[2].count("`pred solve` refused: this session's budget of 3 `pred solve` calls is spent") == 1
    # pred: 3 in the first action, 2 granted solves (the refused one takes no unit): 3 of 5 run.
    assert seen[3].count("pred 0.5.0") == 1 and "the line above repeated 2 more times" in seen[3]
    assert seen[3].count("`pred` refused: this session's budget of 8 `pred` calls is spent") == 2
    assert "x" * 150 in seen[4] and "x" * 500 not in seen[4] and "[benchtui:" in seen[4]
    assert "budget of 6 shell actions is spent" in seen[6] and "one-more" not in seen[6].split("</")[-1]
    if sandbox == "bubblewrap":  # the real pred is not in the sandbox: only the gate hands it out
        assert "/opt/benchtui/shims/pred" in seen[5] and "No such file" in seen[5]
    session = prep.run_dir / "sessions" / end["session"]
    checked = json.loads((session / "attempt-1.certificates.json").read_text())
    assert [c.get("verdict", {}).get("status") for c in checked] == ["rejected", None]
    assert end["result"] == "rejected" and "malformed" in end["reason"]
    assert "submits are spent" in checked[1]["refused"] and checked[1]["certificate"]["note"] == "second"
    trajectory = json.loads((session / "attempt-1.traj.json").read_text())
    raw = [m.get("extra", {}).get("raw_output", "") for m in trajectory["messages"]]
    assert any("x" * 5000 in r for r in raw)  # the full output stays in the log


@pytest.mark.trio
async def test_model_calls_end_the_session_at_exactly_the_limit(tmp_path, monkeypatch):
    pred_on_path(tmp_path, monkeypatch)
    with ScriptedLLM(script=lambda request: Reply("echo still-going")) as llm:
        path = write_campaign(
            tmp_path, llm.url, runner={"step_limit": 20}, budget={"per_session": {"model_calls": 3}}
        )
        with trio.fail_after(60):
            prep, _ = await run_campaign(path, tmp_path / "runs")
    (end,) = journal(prep.run_dir).values()
    assert len(llm.requests) == 3
    assert end["counters"] == {"model_calls": 3, "shell_actions": 3}  # actions counted, no limit
    assert end["exhausted"] == ["model_calls"]
    assert (end["result"], end["reason"]) == (
        "no_certificate",
        "model_calls: the session's 3 model calls are spent",
    )
    assert end["ending"] == {"name": "step_limit", "actions": 3}  # its call limit, not its money


@pytest.mark.slow
@pytest.mark.trio
async def test_sixteen_greedy_agents_at_once_each_stop_at_exactly_every_limit(tmp_path, monkeypatch):
    pred_on_path(tmp_path, monkeypatch)
    with ScriptedLLM(GREEDY) as llm:
        path = write_campaign(
            tmp_path,
            llm.url,
            runner={"environment": "bubblewrap"},
            budget={"per_session": LIMITS},
            repeats=16,
            parallelism=16,
        )
        with trio.fail_after(240):
            prep, _ = await run_campaign(path, tmp_path / "runs")
    ends = journal(prep.run_dir).values()
    assert len(ends) == 16 and len(llm.requests) == 16 * 8
    for end in ends:
        assert end["counters"] == {
            "model_calls": 8,
            "shell_actions": 6,
            "submits": 1,
            "tools": {"pred": 8, "pred solve": 3},
        }


@pytest.mark.trio
async def test_the_shipped_protocol_counts_real_pred_calls_in_bubblewrap(
    tmp_path, monkeypatch, real_pred_path
):
    """The logical campaign's own limits (P = 24, P_solve = 10), the REAL pred, in bubblewrap."""
    real = real_pred_path
    (tmp_path / "path-bin").mkdir()
    (tmp_path / "path-bin" / "pred").symlink_to(real)  # the campaign fingerprints this pred
    monkeypatch.setenv("PATH", f"{tmp_path / 'path-bin'}:{os.environ['PATH']}")
    shipped = tomllib.loads((ROOT / "campaigns" / "problem-reductions-logical.toml").read_text())
    limits = shipped["budget"]["per_session"]
    steps = [
        Reply(
            "pred create MIS --graph 0-1,1-2 -o s.json; "
            "for i in $(seq 12); do pred solve s.json >/dev/null 2>&1; echo rc=$?; done"
        ),
        Reply("for i in $(seq 15); do pred --version; done"),
        Reply(SUBMIT),
    ]
    with ScriptedLLM(steps) as llm:
        path = write_campaign(
            tmp_path,
            llm.url,
            runner={"environment": "bubblewrap", "pred": str(real)},
            budget={"per_session": limits},
        )
        with trio.fail_after(120):
            prep, _ = await run_campaign(path, tmp_path / "runs")
    (end,) = journal(prep.run_dir).values()
    seen = observations(llm)
    assert seen[0].count("rc=0") == 10 and seen[0].count("rc=126") == 2  # P_solve = 10
    assert seen[1].count("pred 0.5.0") == 13  # 24 - 1 create - 10 solves
    assert seen[1].count("this session's budget of 24 `pred` calls is spent") == 2
    assert end["counters"]["tools"] == {"pred": 24, "pred solve": 10}
    assert end["counters"]["model_calls"] == 3 and end["counters"]["shell_actions"] == 2


@pytest.mark.trio
async def test_a_call_the_provider_refused_costs_no_model_call(tmp_path, monkeypatch):
    """A 429 (retried) was no generation: its unit comes back, the model still gets its 2 calls."""
    pred_on_path(tmp_path, monkeypatch)
    answers = iter([Reply(status=429), Reply("echo a"), Reply(SUBMIT)])
    with ScriptedLLM(script=lambda request: next(answers)) as llm:
        path = write_campaign(tmp_path, llm.url, budget={"per_session": {"model_calls": 2}})
        with trio.fail_after(60):
            prep, _ = await run_campaign(path, tmp_path / "runs")
    (end,) = journal(prep.run_dir).values()
    assert [r.status for r in llm.requests] == [429, 200, 200]
    assert end["counters"]["model_calls"] == 2 and "exhausted" not in end
    assert end["reason"] == "submitted without a certificate"
