"""The `command` runner's preflight: the agent CLI and its interpreter must be visible inside the
sandbox with the binds sessions get; otherwise the campaign does not start (exit 2), instead of
every session's agent exiting 127 and counting as the model's outcome."""

from __future__ import annotations

import pytest
import tomli_w
from support import benchtui
from support.mini import make_target, pred_on_path
from support.real_parts import require_tools

from benchtui.runners.command.preflight import interpreter, preflight
from benchtui.runners.command.profile import CommandProfile


@pytest.fixture(autouse=True)
def _tools(tmp_path, monkeypatch):
    require_tools("bwrap", "socat")
    pred_on_path(tmp_path, monkeypatch)


def agent(tmp_path, shebang: str):
    path = tmp_path / "tool" / "bin" / "agent"
    path.parent.mkdir(parents=True)
    path.write_text(f"{shebang}\necho hello\n")
    path.chmod(0o755)
    return path


def test_an_agent_whose_interpreter_is_missing_in_the_sandbox_is_a_problem(tmp_path):
    path = agent(tmp_path, "#!/opt/nowhere/bin/node")
    (check,) = [
        c for c in preflight(CommandProfile(command=[str(path)])) if c.what == "agent CLI in the sandbox"
    ]
    assert not check.ok and "its interpreter /opt/nowhere/bin/node does not exist" in check.problem


def test_an_agent_the_sandbox_can_start_is_ok(tmp_path):
    path = agent(tmp_path, "#!/bin/sh")
    checks = preflight(CommandProfile(command=[str(path)]))
    assert all(c.ok for c in checks), checks
    assert interpreter(path) == "/bin/sh"
    assert interpreter(agent(tmp_path / "b", "#!/usr/bin/env -S node --flag")) == "node"


def test_a_missing_agent_cli_is_a_problem_naming_where_it_looked(tmp_path):
    (check,) = [c for c in preflight(CommandProfile(command=["no-such-agent-23"])) if c.what == "agent CLI"]
    assert not check.ok and "'no-such-agent-23' not found" in check.problem


def test_a_campaign_whose_agent_cannot_start_in_the_sandbox_stops_before_the_run_dir(tmp_path):
    path = agent(tmp_path, "#!/opt/nowhere/bin/node")
    doc = {
        "name": "cli",
        "sessions_per_model": 2,
        "runner": "agent",
        "budget": {"total_usd": 1.0},
        "runners": {"agent": {"kind": "command", "command": [str(path), "{prompt}"]}},
        "models": [{"name": "openai/x", "input_usd_per_mtok": 1.0, "output_usd_per_mtok": 1.0}],
        "environment": {"path": str(make_target(tmp_path))},
    }
    (tmp_path / "c.toml").write_text(tomli_w.dumps(doc))
    done = benchtui("c.toml", "--no-ui", cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert "agent CLI in the sandbox" in line and "/opt/nowhere/bin/node" in line
    assert not (tmp_path / "runs").exists()
    check = benchtui("check", "c.toml", cwd=tmp_path)
    assert check.returncode == 2 and "PROBLEM:" in check.stdout and "/opt/nowhere/bin/node" in check.stdout
