"""A real local model: llama.cpp's llama-server with SmolLM2-135M-Instruct (tests/support/llama.py),
two model names on one api_base, in both action formats — what can be known without a capable
model:

- the ping's verdict names the real obstacle (its chat template has no tool calling; in the text
  format, the model did not act) and never advises switching tool calling on at the server (it
  runs with --jinja);
- every call the server answered is charged from the usage it reported: the ledger is Σ tokens ×
  price, exactly, per model;
- every session ends with an ending of the closed set and none in an infrastructure error; a model
  whose sessions could not act is stopped by the breaker, which says how many stay pending and
  names the same obstacle;
- the viewer shows each answer the model gave, those that failed the format check too.

Skips with a reason where llama-server or the GGUF is missing (a failure with CI=true: .ci/run
builds and installs them).
"""

from __future__ import annotations

import json
import time
from collections import Counter
from decimal import Decimal

import pytest
import trio
from markupsafe import escape
from support import benchtui, last_states
from support.llama import require_llama, served
from support.mini import pred_on_path, run_campaign, write_campaign

from benchtui.cli.main import main as cli
from benchtui.core.endings import CAUSE_WORDS, ENDINGS, GROUP
from benchtui.core.money import token_cost
from benchtui.engine import events as ev
from benchtui.story import evidence
from benchtui.story.trajectory import rejected_answer

pytestmark = pytest.mark.slow

MODELS = ("openai/smollm2-a", "openai/smollm2-b")
PRICE_IN, PRICE_CACHED, PRICE_OUT = Decimal("0.5"), Decimal("0.05"), Decimal("2")
SERVER_ADVICE = ("--jinja", "--enable-auto-tool-choice", "switch tool calling on")


@pytest.fixture(scope="module")
def llama(tmp_path_factory):
    server, gguf = require_llama()
    with served(server, gguf, tmp_path_factory.mktemp("llama") / "server.log") as url:
        yield url


def started_at(run_dir, end) -> float:
    """When the attempt of `end` started (its journal's running line)."""
    for line in (run_dir / "sessions.jsonl").read_text().splitlines():
        rec = json.loads(line)
        if (
            rec.get("session") == end["session"]
            and rec.get("state") == "running"
            and rec["attempt"] == end["attempt"]
        ):
            return float(rec["t"])
    return float(end["t"])


def answers(run_dir, session: str, attempt: int) -> list[str]:
    """What the model said in each answer of an attempt, as its trajectory keeps it."""
    path = run_dir / "sessions" / session / f"attempt-{attempt}.traj.json"
    said = []
    for message in json.loads(path.read_text())["messages"]:
        answer = message if message.get("role") == "assistant" else rejected_answer(message)
        if answer is not None:
            said.append(str(answer.get("content") or ""))
    return said


@pytest.mark.hang_guard(1500)  # a CPU model on 2 shared cores: minutes per session under load
@pytest.mark.parametrize("action_format", ["tool_call", "text"])
def test_a_real_two_model_campaign_on_one_local_server(tmp_path, monkeypatch, capsys, llama, action_format):
    pred_on_path(tmp_path, monkeypatch)
    monkeypatch.setenv("SCRIPTED_API_KEY", "sk-local-ignored")  # llama-server takes any key
    path = write_campaign(
        tmp_path,
        llama,
        models=MODELS,
        sessions_per_model=2,
        parallelism=2,
        stop_model_after_no_action=1,
        runner={"action_format": action_format, "step_limit": 4, "request_timeout_s": 600},
        model={
            "max_output_tokens": 48,  # a short answer is enough to see whether it acts
            "input_usd_per_mtok": float(PRICE_IN),
            "cache_read_usd_per_mtok": float(PRICE_CACHED),  # a tenth: what llama.cpp had cached
            "output_usd_per_mtok": float(PRICE_OUT),
        },
    )

    # The ping: each model acts, or the verdict names what stands in the way — never the server.
    code = cli(["check", str(path), "--ping"])
    said = capsys.readouterr()
    lines = [line for line in said.err.splitlines() if "ping openai/smollm2-" in line]  # problems
    lines += [line for line in said.out.splitlines() if "ping openai/smollm2-" in line and "acts in" in line]
    assert len(lines) == 2 and code in (0, 2), said
    for line in lines:
        assert not any(words in line for words in SERVER_ADVICE), line
        if "no action in its answer" in line:
            obstacle = "template" if action_format == "tool_call" else "model"
            assert f"({CAUSE_WORDS[obstacle]})" in line, line
        else:
            assert f"acts in the {action_format} format" in line or "an action that cannot be read" in line, (
                line
            )

    # The campaign.
    started = time.monotonic()
    prep, recorder = trio.run(run_campaign, path, tmp_path / "runs")
    took = time.monotonic() - started
    run = prep.run_dir
    ends = [r for r in last_states(run).values() if r["state"] not in ("running", "pending")]
    assert ends, "no session ended"
    for end in ends:
        assert end["ending"]["name"] in ENDINGS, end
        assert GROUP[end["ending"]["name"]] != "infrastructure", end  # a real server on loopback

    # Usage = ledger: every call charged from the tokens the server reported, by bucket (llama.cpp
    # reports the prompt tokens it had cached: a session re-sends its conversation), at the
    # model's prices — the cached ones at the cache price; cache writes at the input price.
    ledger = prep.checkpoint.ledger
    cached = calls = 0
    for model in MODELS:
        charged = Decimal(0)
        for end in (e for e in ends if e["model"] == model):
            for call in evidence.read(run, end["session"], end["attempt"]).generations:
                assert not call.worst_case, call  # the server reported usage for each
                cost = (
                    token_cost(call.input_tokens, PRICE_IN)
                    + token_cost(call.cache_read_tokens, PRICE_CACHED)
                    + token_cost(call.cache_write_tokens, PRICE_IN)
                    + token_cost(call.output_tokens, PRICE_OUT)
                )
                assert Decimal(call.cost_usd) == cost, call
                charged += cost
                cached += call.cache_read_tokens
                calls += 1
        assert ledger.models[model].spent_usd == charged, model
    if calls > len(ends):  # a session with a second call: its prompt began with the first's
        assert cached > 0, "llama.cpp's cached prompt tokens were not read"

    # The breaker: a model whose session could not act is stopped, with what is left and why.
    notices = [e.message for e in recorder.events if isinstance(e, ev.Notice) and "in a row" in e.message]
    for model in MODELS:
        own = [e for e in ends if e["model"] == model]
        idle = [e for e in own if e["ending"].get("actions") == 0 and e["ending"]["name"] == "no_action"]
        if idle:
            (notice,) = [n for n in notices if n.startswith(model)]
            left = 2 - len(own)  # its second session may have started before its first ended
            assert (f"{left} stay pending" if left else "None of its sessions is left to launch") in notice
            assert not any(words in notice for words in SERVER_ADVICE), notice
            cause = idle[0]["ending"].get("cause")
            assert cause == ("template" if action_format == "tool_call" else "model"), idle[0]
            assert CAUSE_WORDS[cause] in notice, notice

    # The viewer shows every answer the model gave.
    out = tmp_path / "export"
    exported = benchtui("view", str(run), "--export", str(out), cwd=tmp_path)
    assert exported.returncode == 0, exported.stderr
    shown = 0
    for end in ends:
        page = (out / "sessions" / end["session"] / f"attempt-{end['attempt']}.html").read_text()
        for text in answers(run, end["session"], end["attempt"]):
            head = text.strip().splitlines()[0][:40] if text.strip() else ""
            if head.isascii() and head.isprintable() and head:
                assert str(escape(head)) in page, (head, end["session"])  # as the page escapes it
                shown += 1
        assert "with no answer" not in page, end["session"]
        assert (
            page.count("not run: the answer failed the format check") == end["calls"]
            or end["ending"]["actions"]
        )
    assert shown, "the model said nothing the viewer could show"
    one = [e for e in ends if e["ending"]["name"] != "killed"][0]
    print(
        f"\n[{action_format}] campaign {took:.1f} s for {len(ends)} sessions; endings "
        f"{dict(Counter(e['ending']['name'] for e in ends))}; one session: {one['calls']} calls, "
        f"{one['tokens']} tokens, ${one['cost_usd']}, {one['t'] - started_at(run, one):.1f} s; "
        f"{cached} cached prompt tokens in {calls} calls"
    )
