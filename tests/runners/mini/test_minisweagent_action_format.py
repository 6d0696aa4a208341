"""Both action formats of the mini-swe-agent runner against scripted servers (real HTTP, the real
agent loop, bubblewrap, the stand-in pred): `text` hunts, submits and ends `bug_found` with every
guarantee the tool-call path gives (the budget line, evidence, counters); a model whose answers
hold no usable action ends with the ending that says which kind, having run nothing."""

from __future__ import annotations

import json

import pytest
import trio
from support.mini import RULE, journal, pred_on_path, run_campaign, write_campaign
from support.scripted_llm import Reply, ScriptedLLM
from test_minisweagent_protocol import PROTOCOL, STEPS, observations, output


@pytest.fixture(autouse=True)
def _env(monkeypatch):
    monkeypatch.setenv("SCRIPTED_API_KEY", "sk-test-scripted-0000")


def evidence_of(run_dir, session):
    path = run_dir / "sessions" / session / "evidence.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.mark.trio
async def test_the_text_format_hunts_submits_and_finds_as_tool_calls_do(tmp_path, monkeypatch):
    pred_on_path(tmp_path, monkeypatch)
    with ScriptedLLM(STEPS, text=True) as llm:
        path = write_campaign(
            tmp_path,
            llm.url,
            runner={"environment": "bubblewrap", "action_format": "text"},
            budget={"per_session": PROTOCOL},
        )
        with trio.fail_after(90):
            prep, _ = await run_campaign(path, tmp_path / "runs")
    (end,) = journal(prep.run_dir).values()
    sent = llm.requests[0].body
    assert "tools" not in sent  # the text format offers no tool: the server would ignore it anyway
    system = sent["messages"][0]["content"]
    assert "```mswea_bash_command" in system and "tool call" not in system
    assert len(llm.requests) == 3  # ended on ACCEPTED
    seen = observations(llm)
    assert all(o.startswith("[budget] calls ") for o in seen), seen
    assert all(m["role"] == "user" for m in llm.requests[-1].body["messages"][1:] if m["role"] != "assistant")
    rejected = output(seen[1]).splitlines()
    assert rejected[0] == "REJECTED" and "malformed certificate" in rejected[1]
    assert end["result"] == "bug_found" and end["state"] == "done"
    assert end["ending"] == {"name": "found", "actions": 3}
    assert end["counters"]["submits"] == 2 and end["counters"]["shell_actions"] == 3
    session = prep.run_dir / "sessions" / end["session"]
    checked = json.loads((session / "attempt-1.certificates.json").read_text())
    assert [c["verdict"]["status"] for c in checked] == ["rejected", "accepted"]
    evidence = evidence_of(prep.run_dir, end["session"])
    kinds = [e["kind"] for e in evidence]
    assert kinds.count("generation") == 3 and kinds.count("action") == 3 and kinds.count("submit") == 2
    assert [e["outcome"] for e in evidence if e["kind"] == "generation"] == ["action"] * 3
    assert [e["verdict"] for e in evidence if e["kind"] == "submit"] == ["rejected", "accepted"]
    trajectory = json.loads((session / "attempt-1.traj.json").read_text())
    last = [m for m in trajectory["messages"] if m["role"] == "user"][-1]["content"]
    assert last.startswith("[budget] calls 3/10  actions 3/12")


@pytest.mark.trio
async def test_a_certificate_a_text_command_only_writes_to_a_file_is_not_printed(tmp_path, monkeypatch):
    """Under tool calls a command is not in the answer's text; under text it is: a heredoc that
    writes a certificate block into a file counts no more than it would with tool calls."""
    pred_on_path(tmp_path, monkeypatch)
    block = f'CERTIFICATE_START\n{{"rule": "{RULE}", "violation": "unsound_extraction"}}\nCERTIFICATE_END'
    steps = [
        Reply(f"cat > quiet.txt <<'EOF'\n{block}\nEOF"),
        Reply("echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"),
    ]
    with ScriptedLLM(steps, text=True) as llm:
        path = write_campaign(tmp_path, llm.url, runner={"action_format": "text"})
        with trio.fail_after(90):
            prep, _ = await run_campaign(path, tmp_path / "runs")
    (end,) = journal(prep.run_dir).values()
    assert end["result"] == "no_certificate" and end["ending"] == {"name": "model_done", "actions": 1}
    assert not (prep.run_dir / "sessions" / end["session"] / "attempt-1.certificates.json").exists()


FENCE = "```mswea_bash_command\n{}\n```"
CONTEXT = (
    "This model's maximum context length is 4096 tokens. However, your messages resulted in 9000 tokens."
)


@pytest.mark.trio
@pytest.mark.parametrize(
    ("action_format", "answer", "ending", "detail"),
    [
        ("tool_call", Reply(content="I would run `ls`.\n\n```bash\nls\n```"), "no_action", "no tool call"),
        ("tool_call", Reply("ls", arguments="{not json"), "malformed_action", "tool call that cannot be run"),
        ("tool_call", Reply(content=""), "empty_answer", "an empty answer"),
        ("tool_call", Reply(content="", finish_reason="content_filter"), "empty_answer", "refused"),
        ("text", Reply(content=FENCE.format("ls") + "\n" + FENCE.format("pwd")), "several_actions", "2 "),
        ("text", Reply(content="Let me look around first."), "no_action", "no ```mswea_bash_command block"),
        ("tool_call", Reply(status=400, error=CONTEXT), "context_window", "maximum context length"),
    ],
    ids=["prose", "bad-arguments", "empty", "refused", "two-blocks", "text-prose", "context"],
)
async def test_answers_without_a_usable_action_end_with_their_kind(
    tmp_path, monkeypatch, action_format, answer, ending, detail
):
    pred_on_path(tmp_path, monkeypatch)
    with ScriptedLLM([answer] * 4) as llm:
        path = write_campaign(tmp_path, llm.url, runner={"action_format": action_format})
        with trio.fail_after(90):
            prep, _ = await run_campaign(path, tmp_path / "runs")
    (end,) = journal(prep.run_dir).values()
    assert end["state"] == "done" and end["result"] == "no_certificate", end
    # The text format needs no tool calling: a model that wrote no block simply did not act.
    cause = {"cause": "model"} if (ending, action_format) == ("no_action", "text") else {}
    assert end["ending"] == {"name": ending, "actions": 0, **cause}, end
    assert detail in end["reason"], end["reason"]
    if ending != "context_window":  # three in a row end it (mini-swe-agent's RepeatedFormatError)
        assert len(llm.requests) == 3 and end["reason"].startswith("format_errors: ")
        generations = [e for e in evidence_of(prep.run_dir, end["session"]) if e["kind"] == "generation"]
        assert [(g["outcome"], g["format_error"]) for g in generations] == [("format_error", ending)] * 3
