"""A model that cannot act is not a weak model: two models under `action_format = "tool_call"`, one
server answering with tool calls, one with text blocks only (what many local servers do until tool
calling is switched on). `check --ping` names the problem before the run; the text-only model's
sessions end `no_action` in the journal, the results, the report, the audit (a finding naming
the fix), `ctl status` and the TUI; the breaker stops it after 3 sessions, the rest pending; once
its server does tool calling, `--resume` runs them."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest
import tomli_w
import trio
from support import benchtui
from support.mini import journal, pred_on_path, run_campaign, write_campaign
from support.scripted_llm import Reply, ScriptedLLM
from support.tui import until
from textual.widgets import Static

from benchtui.cli.main import main as cli
from benchtui.engine import events as ev
from benchtui.engine import run as engine
from benchtui.report import build
from benchtui.report.text import render
from benchtui.ui.app import make_app
from benchtui.ui.screens.summary import SummaryScreen
from benchtui.ui.sessions import SessionsTable

STEPS = [Reply("echo hunting"), Reply("echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT")]
TOOLS, TEXT = "openai/tools", "openai/text-only"


@pytest.fixture(autouse=True)
def _env(monkeypatch):
    monkeypatch.setenv("SCRIPTED_API_KEY", "sk-test-scripted-0000")


def two_servers(tmp_path: Path, tools: ScriptedLLM, text: ScriptedLLM, **top) -> Path:
    """The campaign: each model at its own server, five sessions each, one at a time (so the
    breaker's count is the order they ran in)."""
    path = write_campaign(
        tmp_path, tools.url, models=(TOOLS, TEXT), sessions_per_model=5, parallelism=1, **top
    )
    doc = tomllib.loads(path.read_text())
    doc["models"][1]["api_base"] = text.url
    path.write_text(tomli_w.dumps(doc))
    return path


def ended(run_dir: Path, model: str) -> list[dict]:
    return [e for e in journal(run_dir).values() if e["model"] == model and e["state"] != "pending"]


@pytest.mark.trio
async def test_a_model_whose_server_answers_in_text_is_named_stopped_and_resumed(
    tmp_path, monkeypatch, capsys
):
    pred_on_path(tmp_path, monkeypatch)
    with ScriptedLLM(STEPS) as tools, ScriptedLLM(STEPS, text=True) as text:
        path = two_servers(tmp_path, tools, text)

        # Before the run, the ping names it, with the fix; the other model acts.
        assert await trio.to_thread.run_sync(cli, ["check", str(path), "--ping"]) == 2
        checked = capsys.readouterr()
        assert f"ping {TOOLS}" in checked.out and "acts in the tool_call format" in checked.out
        (problem,) = [line for line in checked.err.splitlines() if f"ping {TEXT}" in line]
        assert "no tool call in the answer" in problem and "--enable-auto-tool-choice" in problem, problem

        with trio.fail_after(150):
            prep, recorder = await run_campaign(path, tmp_path / "runs")
        run_dir = prep.run_dir
        assert [e["ending"] for e in ended(run_dir, TOOLS)] == [{"name": "model_done", "actions": 1}] * 5
        text_ends = ended(run_dir, TEXT)
        assert len(text_ends) == 3  # the breaker: after 3, none of its sessions launched
        assert all(e["state"] == "done" and e["result"] == "no_certificate" for e in text_ends)
        assert [e["ending"] for e in text_ends] == [{"name": "no_action", "actions": 0}] * 3
        assert all(e["reason"].startswith("format_errors: no tool call in the answer") for e in text_ends)
        assert sum(1 for e in journal(run_dir).values() if e["model"] == TEXT) == 3  # 2 never launched
        (end,) = [e for e in recorder.events if isinstance(e, ev.CampaignEnded)]
        assert not end.finished and end.message.startswith(
            "not finished: 2 sessions not launched; --resume runs"
        )
        said = [e.message for e in recorder.events if isinstance(e, ev.Notice) and e.level == "error"]
        assert len(said) == 1 and said[0].startswith(f"{TEXT} (api_base {text.url}): 3 sessions in a row")
        assert "without executing any action (no_action" in said[0] and "--enable-auto-tool-choice" in said[0]
        lines = [ev.describe(e) for e in recorder.events if isinstance(e, ev.SessionEnded)]
        assert sum("done no_certificate (no_action)" in (line or "") for line in lines) == 3

        # The results, the report (text, JSON) and the audit say so.
        rows = json.loads((run_dir / "results" / "openai_text-only.json").read_text())["results"]
        assert [r["ending"] for r in rows] == ["no_action"] * 3
        report = build([run_dir])
        by = {m.model: m for m in report.models}
        assert by[TEXT].cannot_act and by[TEXT].not_hunting == 3 and by[TEXT].endings["no_action"] == 3
        assert not by[TOOLS].cannot_act and by[TOOLS].endings["model_done"] == 5
        (finding,) = [f for f in report.fairness.findings if f.startswith("could not act")]
        assert finding.startswith(
            f"could not act: {TEXT}: 3 of 3 sessions ended without executing a single action"
        )
        assert "--enable-auto-tool-choice" in finding and 'action_format = "text"' in finding
        shown = render(report)
        assert (
            f"{TEXT} (!)" in shown and f"  {TEXT}: no_action ×3 (not hunting 3 of 3; 3 could not act" in shown
        )
        assert (
            "ranked by verified distinct-rule bugs (a rule counts once; a verifier confirmed each); none"
            in shown
        )
        data = report.to_json()["models"]
        text_json = next(m for m in data if m["model"] == TEXT)
        assert text_json["endings"]["no_action"] == 3 and text_json["cannot_act"] is True
        assert text_json["usd_per_bug"] is None and text_json["usd_per_verified_bug"] is None
        status = benchtui("ctl", str(run_dir), "status", cwd=tmp_path)
        assert f"  {TEXT}: no_action ×3" in status.stdout, status.stdout

        # The server is fixed (it now does tool calls): --resume runs the two left pending.
        text.text = False
        with trio.fail_after(120):
            prep, _ = await run_campaign(path, tmp_path / "runs", resume=True)
        text_ends = ended(prep.run_dir, TEXT)
        assert [e["ending"]["name"] for e in text_ends] == ["no_action"] * 3 + ["model_done"] * 2


@pytest.mark.anyio
async def test_the_tui_shows_the_ending_and_marks_the_model(tmp_path, monkeypatch):
    pred_on_path(tmp_path, monkeypatch)
    with ScriptedLLM(STEPS) as tools, ScriptedLLM(STEPS, text=True) as text:
        path = two_servers(tmp_path, tools, text)
        app = make_app(engine.prepare(engine.Options(path, tmp_path / "runs")))
        async with app.run_test(size=(120, 36)) as pilot:
            await until(
                pilot,
                lambda: isinstance(app.screen, SummaryScreen) and app.screen.report,
                150,
                "the summary",
            )
            summary = str(app.screen.query_one("#fairness", Static).render())
            assert f"could not act: {TEXT}: 3 of 3 sessions" in summary
            assert "not hunting" in str(app.screen.query_one("#legend", Static).render())
            app.pop_screen()
            await pilot.pause()
            table = app.main.query_one(SessionsTable)
            assert "ending" in table.render_line(0).text  # the column fits 120 columns
            lines = [table.render_line(y).text for y in range(1, 11)]
    text_rows = [line for line in lines if "text-only" in line]
    assert sum("no_action" in line for line in text_rows) == 3, lines
    assert sum("pending" in line for line in text_rows) == 2, lines


@pytest.fixture
def anyio_backend():
    return "asyncio"


@pytest.mark.trio
async def test_the_same_campaign_under_text_hunts_submits_and_finds(tmp_path, monkeypatch, capsys):
    """The fix the finding names, taken: `action_format = "text"`, both servers answering in text
    blocks only. The ping says both act; each model's session hunts, submits (REJECTED, then
    ACCEPTED) and ends bug_found, with the budget line and the evidence as under tool calls."""
    from test_minisweagent_action_format import evidence_of
    from test_minisweagent_protocol import PROTOCOL, observations, output
    from test_minisweagent_protocol import STEPS as HUNT

    pred_on_path(tmp_path, monkeypatch)
    with ScriptedLLM(HUNT, text=True) as one, ScriptedLLM(HUNT, text=True) as other:
        path = write_campaign(
            tmp_path,
            one.url,
            models=(TOOLS, TEXT),
            sessions_per_model=1,
            parallelism=1,
            runner={"environment": "bubblewrap", "action_format": "text"},
            budget={"per_session": PROTOCOL},
        )
        doc = tomllib.loads(path.read_text())
        doc["models"][1]["api_base"] = other.url
        path.write_text(tomli_w.dumps(doc))

        assert await trio.to_thread.run_sync(cli, ["check", str(path), "--ping"]) == 0
        checked = capsys.readouterr().out
        assert checked.count("acts in the text format") == 2, checked
        one.requests.clear(), other.requests.clear()

        with trio.fail_after(150):
            prep, _ = await run_campaign(path, tmp_path / "runs")
    run_dir = prep.run_dir
    for model, llm in ((TOOLS, one), (TEXT, other)):
        (end,) = ended(run_dir, model)
        assert (end["state"], end["result"], end["ending"]) == (
            "done",
            "bug_found",
            {"name": "found", "actions": 3},
        )
        assert len(llm.requests) == 3 and all("tools" not in r.body for r in llm.requests)
        seen = observations(llm)
        assert all(o.startswith("[budget] calls ") for o in seen), seen
        assert [output(o).splitlines()[0] for o in seen[1:]] == ["REJECTED"], seen  # ACCEPTED ended it
        checked = json.loads(
            (run_dir / "sessions" / end["session"] / "attempt-1.certificates.json").read_text()
        )
        assert [c["verdict"]["status"] for c in checked] == ["rejected", "accepted"]
        evidence = evidence_of(run_dir, end["session"])
        assert [e["outcome"] for e in evidence if e["kind"] == "generation"] == ["action"] * 3
        assert [e["verdict"] for e in evidence if e["kind"] == "submit"] == ["rejected", "accepted"]
    report = build([run_dir])
    assert {m.model: (m.verified_bugs, m.endings["found"], m.cannot_act) for m in report.models} == {
        TOOLS: (1, 1, False),
        TEXT: (1, 1, False),
    }
    assert not [f for f in report.fairness.findings if f.startswith("could not act")]
