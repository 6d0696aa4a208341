"""Blind sessions (docs/design/invariants.md#f1): what an agent can observe names neither its model,
nor the campaign's other models, nor its session, nor the host's run dir, for both runners.

One mini-swe-agent session and one command-runner session for each of two models look around
their sandbox the same way (`PROBE`), and the prompt each was given is kept beside; the two
models' records must be identical byte for byte, once the values that differ from one session
to the next whatever the model (`PER_SESSION`, each named) are replaced. Before, every sandbox
showed its copy at `…/sessions/<model>-<index>/workdir`: `pwd`, the mount table, bwrap's command
line (/proc/1/cmdline), git's messages and the saved outputs' paths named the model.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
import trio
from support.mini import journal, make_target, pred_on_path, run_campaign, write_campaign
from support.real_parts import copies_are_volumes, require_tools
from support.script_agent import agent_log, script_campaign
from support.scripted_llm import SUBMIT, Reply, ScriptedLLM
from support.scripted_upstream import ScriptedUpstream

MODELS = ("openai/model-alpha", "openai/model-beta")
SECTIONS = [
    "pwd",
    "env | sort",
    "cat /proc/self/mountinfo",
    "tr '\\0' ' ' < /proc/1/cmdline",
    "ls -la / /workspace",
    "id",
    "hostname",
    "cat /proc/self/cgroup",
    "git -C . status",
    "git log",
    "git config -l",
    "git checkout no-such-branch",
    "git -C /nowhere status",
]
PROBE = "; ".join(f"echo '== {section}'; {section} 2>&1" for section in SECTIONS)
# What differs from one session to the next whatever its model, each replaced by a name.
PER_SESSION = {
    "mount ids and device numbers (given as filesystems are mounted)": (
        re.compile(r"^\d+ \d+ \d+:\d+ ", re.M),
        "ID PARENT MAJOR:MINOR ",
    ),
    "the loop device the copy's filesystem is on": (re.compile(r"/dev/loop\d+"), "/dev/loopN"),
    "times (ls -la)": (re.compile(r"[A-Z][a-z]{2} [ \d]\d [\d:]{4,5}"), "TIME"),
    "how many processes run (/proc's link count)": (re.compile(r"(?<=dr-xr-xr-x) +\d+(?= .* proc\n)"), " N"),
    "the gateway's session token": (re.compile(r"benchtui-[A-Za-z0-9_-]{32}"), "TOKEN"),
    "a session's tool gate folder (a random name)": (re.compile(r"benchtui-gate-\d+-[a-z0-9_]+"), "GATE"),
}


def same_for_every_model(text: str) -> str:
    for pattern, name in PER_SESSION.values():
        text = pattern.sub(name, text)
    return text


def git_target(root: Path) -> Path:
    target = make_target(root)
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "the target"]):
        subprocess.run([*git, *args], cwd=target, check=True, capture_output=True)
    return target


def names_nothing(records: dict[str, str], run_dir: Path) -> None:
    """No raw record names a model, a session or the run dir."""
    for model, text in records.items():
        for name in ("model-alpha", "model-beta", "model_alpha", "model_beta", "sessions/", str(run_dir)):
            assert name not in text, (
                model,
                name,
                text[max(0, text.find(name) - 300) : text.find(name) + 100],
            )


@pytest.fixture(autouse=True)
def _env(tmp_path, monkeypatch):
    require_tools("bwrap")
    copies_are_volumes(monkeypatch)
    pred_on_path(tmp_path, monkeypatch)
    monkeypatch.setenv("SCRIPTED_API_KEY", "sk-test-scripted-0000")
    git_target(tmp_path)


@pytest.mark.trio
async def test_every_mini_session_observes_the_same_sandbox_whatever_its_model(tmp_path):
    def script(request):
        return Reply(PROBE) if request.turn == 0 else Reply(SUBMIT)

    with ScriptedLLM(script=script) as llm:
        path = write_campaign(
            tmp_path,
            llm.url,
            models=MODELS,
            runner={"environment": "bubblewrap", "observation_chars": 200_000},
            budget={"per_session": {"tools": {"pred": 5}}},  # the tool gate's binds are there too
        )
        with trio.fail_after(120):
            prep, _ = await run_campaign(path, tmp_path / "runs")
    assert {r["state"] for r in journal(prep.run_dir).values()} == {"done"}
    seen: dict[str, str] = {}
    for request in llm.requests:
        if request.turn == 1:  # the prompt (system, task) and what the probe showed
            seen[request.model] = "\n\0\n".join(str(m["content"]) for m in request.messages)
    assert len(seen) == 2
    names_nothing(seen, prep.run_dir)
    alpha, beta = (same_for_every_model(text) for text in seen.values())
    assert alpha == beta
    assert "== pwd\n/workspace\n" in alpha and "\n/dev/loopN / /workspace " not in alpha
    assert " / /workspace rw," in alpha and "== hostname\nsandbox\n" in alpha
    assert "fatal: cannot change to '/nowhere'" in alpha and "HEAD detached" in alpha


@pytest.mark.trio
async def test_every_command_runner_session_observes_the_same_sandbox_whatever_its_model(tmp_path):
    require_tools("socat")
    script = f'echo "workdir={{workdir}} prompt_file=$2"; echo "== prompt"; cat "$2"; {PROBE}'
    with ScriptedUpstream() as up:
        path = script_campaign(
            tmp_path,
            up.url,
            script,
            models=MODELS,
            # No {model}: an agent CLI given it tells its model (docs/runners/command.md).
            runner={"command": ["bash", "-c", script, "agent", "{workdir}", "{prompt_file}"]},
            budget={"total_usd": 1.0, "per_session": {"tools": {"pred": 5}}},
        )
        with trio.fail_after(120):
            prep, _ = await run_campaign(path, tmp_path / "state")
    records = journal(prep.run_dir)
    assert {r["state"] for r in records.values()} == {"done"}
    seen = {r["model"]: agent_log(prep.run_dir, r["session"]) for r in records.values()}
    names_nothing(seen, prep.run_dir)
    alpha, beta = (same_for_every_model(text) for text in seen.values())
    assert alpha == beta
    assert "workdir=/workspace prompt_file=/opt/benchtui/prompt.md" in alpha
    assert "You hunt for bugs in problem-reductions" in alpha  # the prompt, as the agent read it
    assert "== pwd\n/workspace\n" in alpha and " / /workspace rw," in alpha
    assert "== hostname\nsandbox\n" in alpha and "OPENAI_API_KEY=TOKEN" in alpha
