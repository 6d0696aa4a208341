"""A second target with a program of its own (tests/fixtures/tally_target: `benchtui-tally-target`,
three files: its pyproject, its package, its CLI `bin/tally`), installed as a distribution: the
runners put its program on the agent's PATH from the profile's `programs` table (it is on no PATH
of the host), a mini-swe-agent session and a command-runner session run it there (its output in
what the agent saw), their prompts carry its brief, and its checker judges their certificates."""

from __future__ import annotations

import importlib
import json
import os
import re
import shutil
import sys
import tomllib

import pytest
import tomli_w
import trio
from support import ROOT
from support.mini import journal, outcome_rows, run_campaign, write_campaign
from support.plugin import install
from support.real_parts import require_tools
from support.script_agent import agent_log, script_campaign
from support.scripted_llm import SUBMIT, Reply, ScriptedLLM
from support.scripted_upstream import ScriptedUpstream

FIXTURE = ROOT / "tests" / "fixtures" / "tally_target"
TALLY = FIXTURE / "bin" / "tally"
VERIFIER = "benchtui_tally (tally against str.split)"
TAB = "tally \"$(printf 'a\\tb')\""
"""`tally` on `a<TAB>b` (two words): it prints 1."""
CERTIFICATE = 'printf \'%s\\n\' CERTIFICATE_START \'{"rule": "count", "text": "a\\tb"}\' CERTIFICATE_END'
"""The certificate, printed as written (`printf %s`: its `\\t` stays the JSON escape of a tab)."""


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    folder = install(tmp_path_factory.mktemp("site-packages"), FIXTURE)
    sys.path.insert(0, str(folder))
    importlib.invalidate_caches()
    yield folder
    sys.path.remove(str(folder))
    sys.modules.pop("benchtui_tally", None)


def on_tally(path, **runner):
    """The campaign at `path` made one of the tally target, its program where `programs` says."""
    doc = tomllib.loads(path.read_text())
    doc["target"] = {"kind": "tally"}
    doc["tasks"] = ["count"]
    doc["environment"]["tools"] = []
    for table in doc["runners"].values():
        table.update(programs={"tally": str(TALLY)}, **runner)
    path.write_text(tomli_w.dumps(doc))
    return path


def judged(run_dir):
    (row,) = outcome_rows(run_dir)
    verdict = row["verify_details"]
    assert (verdict["status"], verdict["verifier"], verdict["cause"]) == ("accepted", VERIFIER, "violation")
    assert verdict["details"] == {"tally": "1", "words": 2}
    assert row["certificate"] == {"rule": "count", "text": "a\tb"}
    (result,) = json.loads((run_dir / "results" / "openai_scripted-a.json").read_text())["results"]
    assert result["result"] == "bug_found"


@pytest.mark.trio
async def test_a_mini_swe_agent_session_runs_its_program_and_its_checker_judges(tmp_path, site, monkeypatch):
    monkeypatch.setenv("SCRIPTED_API_KEY", "sk-scripted")
    assert shutil.which("tally") is None  # on no PATH of the host: the profile's `programs` names it
    steps = [Reply(TAB, 1000, 20), Reply(CERTIFICATE, 1200, 40), Reply(SUBMIT, 1300, 10)]
    with ScriptedLLM(steps) as llm:
        path = on_tally(write_campaign(tmp_path, llm.url))
        with trio.fail_after(90):
            prep, _ = await run_campaign(path, tmp_path / "runs")
    (record,) = journal(prep.run_dir).values()
    assert (record["state"], record["result"]) == ("done", "bug_found"), record
    seen = json.dumps(llm.requests[1].body["messages"])
    assert "You test `tally`, a word counter" in seen and "pred" not in seen  # its brief, no other
    assert re.search(r"<returncode>0</returncode>\\n<output>\\n1\\n</output>", seen), seen[-600:]
    judged(prep.run_dir)


def test_a_command_runner_session_runs_its_program_and_its_checker_judges(tmp_path, site, monkeypatch):
    require_tools("bwrap", "socat")  # the agent runs in bubblewrap, its program bound there
    monkeypatch.setenv("SCRIPTED_API_KEY", "sk-scripted")
    from support import benchtui

    env = {"PYTHONPATH": os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH")]))}
    with ScriptedUpstream() as up:
        path = on_tally(script_campaign(tmp_path, up.url, f"{TAB}; {CERTIFICATE}"))
        done = benchtui("--no-ui", path, "--state-dir", tmp_path / "runs", cwd=tmp_path, env=env, timeout=180)
    assert done.returncode == 0, done.stderr
    run_dir = tmp_path / "runs" / "script"
    (record,) = journal(run_dir).values()
    log = agent_log(run_dir, record["session"])
    assert log.startswith("1\nCERTIFICATE_START"), log[:300]  # tally's own answer, in the sandbox
    prompt = (run_dir / "sessions" / record["session"] / "attempt-1.prompt.md").read_text()
    assert prompt.startswith("You test `tally`") and "test the counter `count`" in prompt
    assert "pred" not in prompt
    judged(run_dir)
