"""Telling the model from the server: a model that could not act is told apart by what stood in
its way — a server without tool calling (it refuses the tools), a model whose chat template has
none (llama.cpp's GET /props -> chat_template_caps), or a model that simply did not act — and the
ping, the breaker and the audit advise for that one only: never a server flag (`--jinja`) to a
server that already does tool calling.

The servers are scripted on 127.0.0.1 (benchtui/runners/mini/scripted.py); the real llama.cpp
server is in tests/runners/test_real_local_model.py.
"""

from __future__ import annotations

import pytest
import trio
from support import last_states
from support.mini import pred_on_path, run_campaign, write_campaign
from support.scripted_llm import Reply, ScriptedLLM

from benchtui.cli.main import main as cli
from benchtui.core.endings import CAUSE_WORDS, SessionEnding, cause_of, fix
from benchtui.engine import events as ev
from benchtui.engine.breaker import Breaker
from benchtui.engine.records import JournalRecord
from benchtui.report import build
from benchtui.runners.kit import serverprobe

PROSE = Reply(content="I would run `echo ok` to check.")
NO_TOOLS = {"supports_tools": False, "supports_tool_calls": False, "supports_system_role": True}
TOOLS = {"supports_tools": True, "supports_tool_calls": True, "supports_system_role": True}
SERVER_FLAGS = ("--jinja", "--enable-auto-tool-choice")


def test_the_cause_follows_what_the_server_says_of_its_template():
    assert cause_of("no_action", "tool_call", NO_TOOLS) == "template"
    assert cause_of("no_action", "tool_call", TOOLS) == "model"
    assert cause_of("no_action", "tool_call", None) is None  # a server that says nothing
    assert cause_of("no_action", "tool_call", {"supports_tools": True}) is None  # no word on calls
    assert cause_of("no_action", "text", None) == "model"  # no tool calling involved
    assert cause_of("empty_answer", "tool_call", NO_TOOLS) is None


@pytest.mark.parametrize("cause", ["template", "model"])
@pytest.mark.parametrize("action_format", ["tool_call", "text"])
def test_no_advice_names_a_server_flag_when_the_server_does_tool_calling(cause, action_format):
    words = fix("no_action", action_format, cause)
    assert not any(flag in words for flag in SERVER_FLAGS), words
    assert "--jinja" in fix("no_action", "tool_call", "server")


def test_the_probe_reads_chat_template_caps_and_knows_nothing_elsewhere():
    with ScriptedLLM([], template_caps=NO_TOOLS) as llm:
        assert serverprobe.template_caps(llm.url) == NO_TOOLS
        assert serverprobe.props_url(llm.url) == llm.url.removesuffix("/v1") + "/props"
    with ScriptedLLM([]) as llm:  # no /props: not llama.cpp
        assert serverprobe.template_caps(llm.url) is None
    assert serverprobe.template_caps(None) is None
    assert serverprobe.template_caps("http://127.0.0.1:9/v1", timeout=1) is None  # nothing listens


def ended(model: str, name: str, cause: str | None) -> JournalRecord:
    return JournalRecord(
        session=f"{model}-0",
        task=None,
        runner="mini",
        model=model,
        index=0,
        state="done",
        attempt=1,
        result="no_certificate",
        ending=SessionEnding(name, 0, cause=cause),  # type: ignore[arg-type]
    )


@pytest.mark.parametrize(
    ("cause", "words"),
    [("template", "chat template has no tool calling"), ("model", "the model did not act")],
)
def test_the_breaker_names_the_obstacle_its_sessions_found(cause, words):
    breaker = Breaker(no_action_after=2)
    breaker.ended(ended("m", "no_action", cause))
    trip = breaker.ended(ended("m", "no_action", cause))
    assert trip is not None and trip.obstacle == cause
    said = trip.cause(2, "tool_call")
    assert words in said and not any(flag in said for flag in SERVER_FLAGS), said


@pytest.mark.trio
@pytest.mark.parametrize(("caps", "cause"), [(NO_TOOLS, "template"), (TOOLS, "model"), (None, None)])
async def test_a_session_that_could_not_act_records_what_stood_in_its_way(tmp_path, monkeypatch, caps, cause):
    """Recorded on the end line, it is what the breaker's line and the audit's finding say."""
    pred_on_path(tmp_path, monkeypatch)
    monkeypatch.setenv("SCRIPTED_API_KEY", "sk-test-0000")
    with ScriptedLLM([PROSE] * 4, template_caps=caps) as llm:
        path = write_campaign(tmp_path, llm.url, parallelism=1, stop_model_after_no_action=1)
        with trio.fail_after(120):
            prep, recorder = await run_campaign(path, tmp_path / "runs")
    (end,) = last_states(prep.run_dir).values()
    assert end["ending"] == {"name": "no_action", "actions": 0, **({"cause": cause} if cause else {})}, end
    (said,) = [e for e in recorder.events if isinstance(e, ev.Notice) and "in a row" in e.message]
    # Its only session ended: nothing stays pending, the run finished, and no `error:` says otherwise.
    assert said.level == "warning" and "None of its sessions is left to launch" in said.message, said
    (finding,) = [f for f in build([prep.run_dir]).fairness.findings if f.startswith("could not act")]
    for words in (said.message, finding):
        if cause is not None:
            assert CAUSE_WORDS[cause] in words, words
            assert not any(flag in words for flag in SERVER_FLAGS), words
    assert ("the model's own failure to act" in finding) == (cause == "model"), finding


def ping_line(capsys, path, expect: int = 2) -> str:
    assert cli(["check", str(path), "--ping"]) == expect
    out = capsys.readouterr()
    said = out.err if expect == 2 else out.out  # a problem is its stderr line (stdout has the table)
    found = [line for line in said.splitlines() if "ping openai/scripted-a" in line]
    assert len(found) == 1, out
    (line,) = found
    return line


def test_the_ping_names_a_template_without_tool_calling_and_never_advises_the_server_flag(
    tmp_path, capsys, monkeypatch
):
    pred_on_path(tmp_path, monkeypatch)
    monkeypatch.setenv("SCRIPTED_API_KEY", "sk-test-ping-0000")
    with ScriptedLLM([PROSE], template_caps=NO_TOOLS) as llm:
        line = ping_line(capsys, write_campaign(tmp_path, llm.url, sessions_per_model=1))
    assert "no action in its answer (the model's chat template has no tool calling)" in line, line
    assert not any(flag in line for flag in SERVER_FLAGS), line
    assert 'action_format = "text"' in line and "--chat-template-file" in line, line


def test_the_ping_says_the_model_did_not_act_when_server_and_template_do_tool_calling(
    tmp_path, capsys, monkeypatch
):
    pred_on_path(tmp_path, monkeypatch)
    monkeypatch.setenv("SCRIPTED_API_KEY", "sk-test-ping-0000")
    with ScriptedLLM([PROSE], template_caps=TOOLS) as llm:
        line = ping_line(capsys, write_campaign(tmp_path, llm.url, sessions_per_model=1))
    assert "(the model did not act)" in line and "more capable model" in line, line
    assert not any(flag in line for flag in SERVER_FLAGS), line
    with ScriptedLLM([PROSE], template_caps=TOOLS) as llm:  # the text format: no tool calling at all
        path = write_campaign(tmp_path, llm.url, sessions_per_model=1, runner={"action_format": "text"})
        line = ping_line(capsys, path)
    assert "(the model did not act)" in line and "mswea_bash_command" in line, line
    assert not any(flag in line for flag in SERVER_FLAGS), line


def test_the_ping_names_a_server_that_refuses_the_tools(tmp_path, capsys, monkeypatch):
    """llama.cpp without --jinja refuses a request with tools (a 500): that, and only that, is the
    server to switch tool calling on at — not 'the server fails (5xx)'."""
    pred_on_path(tmp_path, monkeypatch)
    monkeypatch.setenv("SCRIPTED_API_KEY", "sk-test-ping-0000")
    refuses = Reply(status=500, error="tools param requires --jinja flag")
    with ScriptedLLM([refuses] * 8, template_caps=TOOLS) as llm:
        line = ping_line(capsys, write_campaign(tmp_path, llm.url, sessions_per_model=1))
    assert "the server does not do tool calling" in line and "--jinja" in line, line
    assert "5xx" not in line, line
