"""The `command` runner's profile, where its certificates come from, what its sandbox binds."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from pydantic import ValidationError

from benchtui.core import registry
from benchtui.runners.command import sandbox
from benchtui.runners.command.launch import Ran
from benchtui.runners.command.profile import CommandProfile
from benchtui.runners.command.runner import _blocks
from benchtui.runners.kit.collect import certificate_lines


def test_a_profile_needs_a_command_and_rejects_typos():
    with pytest.raises(ValidationError):
        registry.validate_profile(
            {"kind": "command", "command": [], "environment": "local", "unsandboxed": True}
        )
    with pytest.raises(ValidationError, match="comand"):
        registry.validate_profile(
            {"kind": "command", "comand": ["codex"], "environment": "local", "unsandboxed": True}
        )
    profile = registry.validate_profile(
        {"kind": "command", "command": ["codex", "{prompt}"], "environment": "local", "unsandboxed": True}
    )
    assert isinstance(profile, CommandProfile)


def test_a_local_agent_cli_must_be_declared_unsandboxed():
    with pytest.raises(ValidationError, match="unsandboxed = true"):
        registry.validate_profile({"kind": "command", "command": ["codex"], "environment": "local"})
    with pytest.raises(ValidationError, match="unsandboxed = true"):
        CommandProfile(command=["x"], environment="local", unsandboxed=False)


PROMPT_SHA256 = "02d63ecf4b49b574659fa7e6d7d11ed04bc4a21ae6e1cb3c32ee67f05222076c"
"""The digest of prompt.md as the release before the brief moved shipped it (problem-reductions'
wording in the file): what runs of that release hold in their identity."""


def test_the_shipped_prompt_with_the_problem_reductions_brief_is_the_one_before_byte_for_byte():
    from benchtui.core import registry
    from benchtui.runners.command.profile import DEFAULT_PROMPT
    from benchtui.targets.problem_reductions import ProblemReductions

    assert "pred" not in DEFAULT_PROMPT.read_text().split("`")
    shipped = registry.validate_profile({"kind": "command", "command": ["x"]})
    assert shipped.prompt_sha256 == PROMPT_SHA256  # the default target's brief in it
    rendered = shipped.render_prompt("spinglass_maxcut", ProblemReductions.brief)
    assert "`pred reduce`" in rendered and "test the reduction rule `spinglass_maxcut`" in rendered
    other = registry.validate_profile({"kind": "command", "command": ["x"]}, registry.target_class("none"))
    text = other.render_prompt(None, registry.target_class("none").brief)
    assert other.prompt_sha256 != PROMPT_SHA256 and "pred" not in text and "[[brief:" not in text


def test_the_prompt_is_part_of_the_identity(tmp_path):
    one, two = tmp_path / "one.md", tmp_path / "two.md"
    one.write_text("Test `{task}`.")
    two.write_text("Test `{task}` carefully.")
    a, b = (
        CommandProfile(command=["x"], environment="local", unsandboxed=True, prompt_template=p)
        for p in (one, two)
    )
    assert a.prompt_sha256 != b.prompt_sha256
    assert a.render_prompt("rule_x") == "Test `rule_x`."
    with pytest.raises(ValidationError, match="missing.md"):
        CommandProfile(
            command=["x"], environment="local", unsandboxed=True, prompt_template=tmp_path / "missing.md"
        )


def test_certificates_come_from_the_output_and_from_certificates_jsonl(tmp_path):
    log, workdir = tmp_path / "agent.log", tmp_path / "workdir"
    workdir.mkdir()
    log.write_text('chatter\nCERTIFICATE_START\n{"rule": "a"}\nCERTIFICATE_END\nmore chatter\n')
    (workdir / "certificates.jsonl").write_text('{"rule": "b"}\nnot json\n[1, 2]\n{not json either\n')
    found = certificate_lines(workdir)
    assert found.problem == ""
    ran = Ran(log=log.read_bytes(), certificate_lines=found.lines)
    assert [b.strip() for b in _blocks(ran)] == ['{"rule": "a"}', '{"rule": "b"}']


def test_the_sandbox_binds_an_agent_install_tree_and_its_interpreter(tmp_path):
    node = tmp_path / "agents" / "node_modules" / "@x" / "cli" / "bin" / "cli.js"
    node.parent.mkdir(parents=True)
    node.write_text("#!/usr/bin/env node\n")
    node.chmod(0o755)
    assert sandbox.mounts_for(node) == [tmp_path / "agents"]  # /usr/bin/env is in the sandbox already
    script = tmp_path / "venv" / "bin" / "tool"
    script.parent.mkdir(parents=True)
    script.write_text(f"#!{sys.executable}\n")
    mounts = sandbox.mounts_for(script)
    assert tmp_path / "venv" in mounts
    assert Path(sys.executable).resolve().parent.parent in mounts  # the Python it runs on


def test_keys_added_since_the_release_leave_old_identities_alone():
    # A campaign that does not set the new keys dumps (frozen copy, identity) as before they existed.
    profile = CommandProfile(command=["codex"])
    assert not {"unsandboxed", "max_processes", "max_disk_mb"} & set(profile.model_dump())
    bounded = CommandProfile(command=["codex"], max_processes=20, max_disk_mb=5)
    assert CommandProfile(**bounded.model_dump()) == bounded
    assert bounded.model_dump()["max_processes"] == 20


def test_an_unsandboxed_agent_keeps_its_path_under_the_lifeline_watcher(tmp_path):
    """The watcher runs its own `cat` by path: the agent's PATH (its shims and pred first) reaches
    the agent unchanged (it once became /usr/bin:/bin, so no counted tool or `submit` was found)."""
    reader, writer = os.pipe()
    shims = tmp_path / "shims"
    shims.mkdir()
    try:
        done = subprocess.run(
            sandbox.watched(["/bin/sh", "-c", 'echo "$PATH"'], reader),
            env={"PATH": f"{shims}:/usr/bin:/bin"},
            pass_fds=(reader,),
            capture_output=True,
            text=True,
            timeout=10,
        )
    finally:
        os.close(writer)
        os.close(reader)
    assert done.stdout.strip() == f"{shims}:/usr/bin:/bin"
