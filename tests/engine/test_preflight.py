"""Preflight: `benchtui check CAMPAIGN.toml [--ping]`, and its cheap part when a campaign starts.

The ping goes through the scripted OpenAI-compatible server on 127.0.0.1, never a real API.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tomllib
from decimal import Decimal
from pathlib import Path

import pytest
import tomli_w
from support.mini import pred_on_path, write_campaign
from support.real_parts import ROOT, require_pred
from support.scripted_llm import Reply, ScriptedLLM

from benchtui.cli.main import main as cli
from benchtui.core.money import token_cost

SHIPPED = ROOT / "campaigns" / "problem-reductions.toml"


def shipped_campaign(tmp_path: Path, **changes) -> Path:
    """The shipped campaign with its target (../problem-reductions) replaced by a small git repo."""
    target = tmp_path / "problem-reductions"
    (target / "src" / "rules").mkdir(parents=True)
    (target / "src" / "rules" / "spinglass_maxcut.rs").write_text("// a rule\n")
    for args in (
        ["init", "-q"],
        ["add", "."],
        ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "t"],
    ):
        subprocess.run(["git", "-C", str(target), *args], check=True)
    doc = tomllib.loads(SHIPPED.read_text())
    doc["environment"]["path"] = str(target)
    doc.update(changes)
    path = tmp_path / "problem-reductions.toml"
    path.write_text(tomli_w.dumps(doc))
    return path


def test_the_shipped_campaign_passes_with_the_real_pred(tmp_path, capsys, monkeypatch):
    pred = require_pred()
    monkeypatch.setenv("PATH", f"{pred.parent}{os.pathsep}{os.environ['PATH']}")
    assert cli(["check", str(shipped_campaign(tmp_path))]) == 0
    out = capsys.readouterr().out
    for task in tomllib.loads(SHIPPED.read_text())["tasks"]:
        assert f"task {task}" in out and "canonical example rejected" in out
    assert "bubblewrap sandbox" in out and "inside: pred 0.5.0" in out
    assert "$20.0000" in out  # worst case per model: 10 sessions x $2, within the $20 cap


def test_problems_are_one_line_each_and_exit_2(tmp_path, capsys, monkeypatch):
    pred = require_pred()
    monkeypatch.setenv("PATH", f"{pred.parent}{os.pathsep}{os.environ['PATH']}")
    path = shipped_campaign(tmp_path, tasks=["spinglass_maxcut", "no_such_rule"])
    doc = tomllib.loads(path.read_text())
    doc["environment"]["path"] = str(tmp_path / "gone")
    path.write_text(tomli_w.dumps(doc))
    assert cli(["check", str(path)]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 2 and all(line.startswith("benchtui check: ") for line in err), err
    assert "does not exist" in err[0] and "task no_such_rule: no such rule" in err[1]


def test_a_missing_pred_is_a_problem_of_check_and_stops_a_start_before_any_session(tmp_path, capsys):
    path = write_campaign(tmp_path, "http://127.0.0.1:9/v1", runner={"pred": str(tmp_path / "no-pred")})
    assert cli(["check", str(path)]) == 2
    assert "runner mini: pred: " in capsys.readouterr().err
    state = tmp_path / "runs"
    assert cli([str(path), "--no-ui", "--state-dir", str(state)]) == 2
    err = capsys.readouterr().err.splitlines()
    # Every problem, one line each: pred, the key variable, the api_base nobody listens on.
    assert len(err) == 3 and all(line.startswith("benchtui: ") for line in err), err
    assert "pred" in err[0] and "SCRIPTED_API_KEY" in err[1] and "127.0.0.1:9" in err[2]
    assert not (state / "mini").exists()  # nothing written, no session started


def test_a_sandbox_that_cannot_see_pred_is_a_problem(tmp_path, monkeypatch):
    from benchtui.runners.mini.preflight import preflight
    from benchtui.runners.mini.profile import MiniSweProfile

    pred_on_path(tmp_path, monkeypatch)
    profile = MiniSweProfile(kind="mini-swe-agent", environment="bubblewrap")
    assert all(c.ok for c in preflight(profile))
    monkeypatch.setattr("benchtui.runners.mini.preflight.bubblewrap_args", lambda pred: ["--bogus-option"])
    (sandbox,) = [c for c in preflight(profile) if "sandbox" in c.what]
    assert not sandbox.ok and "does not start" in sandbox.problem


PING = Reply("echo OK", prompt_tokens=21, completion_tokens=3)


def test_ping_makes_one_tiny_metered_call_per_model_and_reports_its_cost(tmp_path, capsys, monkeypatch):
    pred_on_path(tmp_path, monkeypatch)
    monkeypatch.setenv("SCRIPTED_API_KEY", "sk-test-ping-0000")
    children_tmp = tmp_path / "children-tmp"  # where the ping's child makes its temporary files
    children_tmp.mkdir()
    monkeypatch.setenv("TMPDIR", str(children_tmp))
    with ScriptedLLM([PING]) as llm:
        path = write_campaign(
            tmp_path, llm.url, models=("openai/ping-a", "openai/ping-b"), sessions_per_model=1
        )
        assert cli(["check", str(path), "--ping"]) == 0
    out = capsys.readouterr().out
    assert sorted(r.model for r in llm.requests) == ["ping-a", "ping-b"]
    assert all(r.body["max_tokens"] == 256 for r in llm.requests)  # the bound the meter authorised
    # It asks for one action in the campaign's format: a bash tool call (tool_call, the default).
    assert all([t["function"]["name"] for t in r.body["tools"]] == ["bash"] for r in llm.requests)
    assert out.count("acts in the tool_call format (asked for `echo ok`, got `echo OK`)") == 2, out
    assert all(r.headers["authorization"] == "Bearer sk-test-ping-0000" for r in llm.requests)
    cost = token_cost(21, Decimal(3)) + token_cost(3, Decimal(15))  # the campaign's prices
    assert out.count(f"(ledger: ${cost.normalize():f})") == 2, out
    assert "21 + 3 tokens" in out and "sk-test" not in out
    assert list(children_tmp.iterdir()) == []  # nothing left behind


def test_ping_reports_a_refused_key_and_a_missing_one(tmp_path, capsys, monkeypatch):
    pred_on_path(tmp_path, monkeypatch)
    with ScriptedLLM([Reply(status=401)]) as llm:
        path = write_campaign(tmp_path, llm.url, sessions_per_model=1)
        monkeypatch.delenv("SCRIPTED_API_KEY", raising=False)
        assert cli(["check", str(path), "--ping"]) == 2
        assert "SCRIPTED_API_KEY is not set" in capsys.readouterr().err
        monkeypatch.setenv("SCRIPTED_API_KEY", "sk-test-refused-0000")
        assert cli(["check", str(path), "--ping"]) == 2
    err = capsys.readouterr().err
    assert "ping openai/scripted-a" in err and "Authentication" in err and "ledger: $0)" in err, err
    assert len(llm.requests) == 1


def test_ping_on_a_keyless_local_server_says_it_answers(tmp_path, capsys, monkeypatch):
    """A local server (api_base, no api_key_env): the ping sends the placeholder key a session
    sends, so the SDK does not refuse it as "Missing credentials" (which litellm calls a 5xx)."""
    pred_on_path(tmp_path, monkeypatch)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.chdir(tmp_path)  # no ./.env
    with ScriptedLLM([PING]) as llm:
        path = write_campaign(tmp_path, llm.url, sessions_per_model=1)
        doc = tomllib.loads(path.read_text())
        del doc["models"][0]["api_key_env"]
        path.write_text(tomli_w.dumps(doc))
        assert cli(["check", str(path), "--ping"]) == 0, capsys.readouterr().err
    out = capsys.readouterr().out
    assert "acts in the tool_call format" in out and "5xx" not in out, out
    assert [r.headers["authorization"] for r in llm.requests] == ["Bearer no-key"]


def test_a_model_name_no_provider_routes_is_refused_at_load_in_one_line(tmp_path, capsys, monkeypatch):
    """`qwen3-8b` behind an OpenAI-compatible server: litellm routes it nowhere; every call would
    fail before it is sent. Refused before the run dir is written, with the `openai/` hint."""
    pred_on_path(tmp_path, monkeypatch)
    monkeypatch.setenv("SCRIPTED_API_KEY", "sk-test-ping-0000")
    with ScriptedLLM([PING]) as llm:
        path = write_campaign(tmp_path, llm.url, models=("qwen3-8b", "openai/qwen3-8b"), sessions_per_model=1)
        state = tmp_path / "runs"
        assert cli([str(path), "--no-ui", "--state-dir", str(state)]) == 2
        err = capsys.readouterr().err.splitlines()
        assert len(err) == 1 and err[0].startswith("benchtui: model qwen3-8b: "), err
        assert "openai/qwen3-8b" in err[0] and "routes 'qwen3-8b' to no provider" in err[0]
        assert not state.exists() and llm.requests == []  # nothing written, nothing sent or charged
        assert cli(["check", str(path)]) == 2
        assert "model qwen3-8b: litellm routes" in capsys.readouterr().err


@pytest.mark.parametrize("module", ["benchtui.engine.preflight", "benchtui.cli.ping"])
def test_preflight_imports_neither_litellm_nor_textual(module):
    code = f"import sys, {module}; bad = [m for m in ('litellm', 'textual', 'minisweagent') if m in sys.modules]; assert not bad, bad"
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)


def ping_problems(capsys, tmp_path, llm, **campaign) -> str:
    path = write_campaign(tmp_path, llm.url, sessions_per_model=1, **campaign)
    assert cli(["check", str(path), "--ping"]) == 2
    return capsys.readouterr().err


def test_ping_names_a_server_that_answers_in_text_and_the_fix(tmp_path, capsys, monkeypatch):
    """What many local servers do until tool calling is switched on: the command in a code block."""
    pred_on_path(tmp_path, monkeypatch)
    monkeypatch.setenv("SCRIPTED_API_KEY", "sk-test-ping-0000")
    with ScriptedLLM([PING], text=True) as llm:
        err = ping_problems(capsys, tmp_path, llm)
        (line,) = [line for line in err.splitlines() if "ping openai/scripted-a" in line]
        assert "no action in its answer: no tool call in the answer: a fenced block in its text" in line
        assert "--enable-auto-tool-choice" in line and 'action_format = "text"' in line, line
        # The same server with the text format: it acts.
        path = write_campaign(tmp_path, llm.url, sessions_per_model=1, runner={"action_format": "text"})
        assert cli(["check", str(path), "--ping"]) == 0
        assert "acts in the text format (asked for `echo ok`, got `echo OK`)" in capsys.readouterr().out
        assert "tools" not in llm.requests[-1].body


def test_ping_names_the_wrong_format_under_text(tmp_path, capsys, monkeypatch):
    pred_on_path(tmp_path, monkeypatch)
    monkeypatch.setenv("SCRIPTED_API_KEY", "sk-test-ping-0000")
    with ScriptedLLM([PING]) as llm:  # tool calls, for a campaign that expects a text block
        err = ping_problems(capsys, tmp_path, llm, runner={"action_format": "text"})
    assert "no ```mswea_bash_command block in the answer: a tool call instead" in err, err


@pytest.mark.parametrize("tokens", [300, 100_000], ids=["within-the-hold", "past-the-hold"])
def test_ping_says_a_server_ignores_max_tokens(tmp_path, capsys, monkeypatch, tokens):
    """More output tokens than asked for: within the ping's hold it says so itself; past it the
    meter stops the session (overspent) and says why. Either way: the server ignores max_tokens."""
    pred_on_path(tmp_path, monkeypatch)
    monkeypatch.setenv("SCRIPTED_API_KEY", "sk-test-ping-0000")
    with ScriptedLLM([Reply("echo ok", prompt_tokens=21, completion_tokens=tokens)]) as llm:
        err = ping_problems(capsys, tmp_path, llm)
    assert f"returned {tokens} output tokens for max_tokens 256" in err, err
    assert "the server ignores max_tokens" in err and "cap" in err, err


def test_ping_names_an_endpoint_nothing_listens_on(tmp_path, capsys, monkeypatch):
    pred_on_path(tmp_path, monkeypatch)
    monkeypatch.setenv("SCRIPTED_API_KEY", "sk-test-ping-0000")
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))  # bound, not listening: connections are refused
        url = f"http://127.0.0.1:{closed.getsockname()[1]}/v1"
        path = write_campaign(tmp_path, url, sessions_per_model=1)
        assert cli(["check", str(path), "--ping"]) == 2
    err = capsys.readouterr().err
    assert "ping openai/scripted-a: connection refused: " in err, err
