"""The runner profiles shipped in runners/ (benchtui/profiles links there; a wheel holds copies): a
campaign names one (`use = "codex"`, or a file), overrides its keys, and holds what it used: the
resolved table is in its identity and its run dir's frozen copy, so a resume does not read the
profile again; an unknown name is one line listing the shipped ones; `benchtui runners` lists them
with what each needs, `benchtui check` says which would run here."""

from __future__ import annotations

import json
import tomllib

import pytest
from support import ROOT, assert_one_line_error, benchtui, write_campaign

from benchtui.core import registry
from benchtui.engine import campaign as campaign_file
from benchtui.engine.campaign.shipped import SHIPPED, shipped

NAMES = ["claude-code", "codex", "mini-swe-agent", "mini-swe-agent-cli", "mini-swe-agent-text", "opencode"]
CAMPAIGN_RUNNERS = {
    "agents.toml": "72e62d8788927709",
    "problem-reductions-logical.toml": "61a7dca956660dce",
    "problem-reductions-top50.toml": "ef521f39cfe75dda",
    "problem-reductions.toml": "ef521f39cfe75dda",
}
"""The `runners` identity part of each shipped campaign as it was with its tables written inline
(before runners/): naming a shipped profile changes nothing a run holds."""


def test_the_shipped_profiles_are_the_repository_runners_folder_and_each_is_a_valid_profile():
    assert SHIPPED.resolve() == (ROOT / "runners").resolve()  # the link a wheel resolves into copies
    found = shipped()
    assert sorted(found) == NAMES
    for profile in found.values():
        validated = registry.validate_profile(profile.table)
        assert validated.kind == profile.kind and profile.description and profile.install, profile.name
    assert found["mini-swe-agent-text"].table["action_format"] == "text"
    assert found["opencode"].program == "opencode" and found["opencode"].table["command"][:2] == [
        "opencode",
        "run",
    ]
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "profiles/*.toml" in pyproject["tool"]["setuptools"]["package-data"]["benchtui"]


@pytest.mark.parametrize("name", sorted(CAMPAIGN_RUNNERS))
def test_the_shipped_campaigns_use_them_with_the_identity_they_had(name):
    path = ROOT / "campaigns" / name
    tables = tomllib.loads(path.read_text())["runners"]
    assert all(set(table) == {"use"} for table in tables.values()), tables  # nothing repeated
    campaign = campaign_file.load(path, require_target=False)
    assert (
        campaign_file.identity_digest(campaign.identity_parts("sha256:x"))["runners"]
        == CAMPAIGN_RUNNERS[name]
    )


def test_a_campaign_overrides_a_shipped_profile_and_its_run_holds_what_it_used(tmp_path):
    path = write_campaign(tmp_path)
    text = path.read_text().replace(
        "[runners.fake]",
        '[runners.agent]\nuse = "codex"\nwall_time_s = 60\nenv = { A = "1" }\n\n[runners.fake]',
    )
    path.write_text(text)
    campaign = campaign_file.load(path)
    agent = campaign.runners["agent"]
    assert agent.kind == "command" and agent.wall_time_s == 60  # its key over the profile's
    assert agent.env == {"A": "1"} and agent.command[0] == "codex"  # a table replaced whole
    frozen = tomllib.loads(campaign.to_toml())["runners"]["agent"]
    assert "use" not in frozen and frozen["command"] == shipped()["codex"].table["command"]


def test_a_profile_file_is_used_as_it_was_when_the_run_started(tmp_path):
    """`use = "mine.toml"`: the run's frozen copy holds its table, so editing the file later
    changes nothing a `--resume` sees."""
    (tmp_path / "mine.toml").write_text(
        'description = "mine"\n[needs]\n[profile]\nkind = "fake"\ncost_usd = 0.01\nlatency_s = 0.0\n'
    )
    path = write_campaign(tmp_path, sessions=2)
    path.write_text(
        path.read_text()
        .replace('runner = "fake"', 'runner = "mine"')
        .replace("[runners.fake]", '[runners.mine]\nuse = "mine.toml"\n\n[runners.fake]')
    )
    done = benchtui("--no-ui", path, "--state-dir", tmp_path / "runs", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    run_dir = tmp_path / "runs" / "t"
    frozen = tomllib.loads((run_dir / "campaign.toml").read_text())["runners"]["mine"]
    assert frozen["kind"] == "fake" and frozen["cost_usd"] == 0.01 and "use" not in frozen
    (tmp_path / "mine.toml").write_text("this is not TOML any more")
    frozen_copy = run_dir / "campaign.toml"
    again = benchtui(frozen_copy, "--no-ui", "--resume", "--state-dir", tmp_path / "runs", cwd=tmp_path)
    assert again.returncode == 0, again.stdout + again.stderr  # the identity it started with
    (tmp_path / "mine.toml").write_text('[profile]\nkind = "fake"\ncost_usd = 0.02\nlatency_s = 0.0\n')
    changed = benchtui(path, "--no-ui", "--resume", "--state-dir", tmp_path / "runs", cwd=tmp_path)
    assert changed.returncode == 2 and "runners" in changed.stderr, changed.stderr  # what it used changed


def test_an_unknown_profile_is_one_line_listing_the_shipped_ones(tmp_path):
    path = write_campaign(tmp_path)
    path.write_text(path.read_text().replace("[runners.fake]", '[runners.fake]\nuse = "codx"'))
    for argv in (["--no-ui", path, "--state-dir", tmp_path / "runs"], ["check", path]):
        done = benchtui(*argv, cwd=tmp_path)
        assert_one_line_error(
            done, f"runners.fake: use = 'codx': no such runner profile (shipped: {', '.join(NAMES)})"
        )
    assert not (tmp_path / "runs").exists()


def test_benchtui_runners_lists_what_each_needs_and_check_says_which_would_run_here(tmp_path):
    listed = json.loads(benchtui("runners", "--format", "json", cwd=tmp_path).stdout)
    assert [r["name"] for r in listed] == NAMES
    codex = next(r for r in listed if r["name"] == "codex")
    assert (codex["kind"], codex["program"], codex["extra"]) == ("command", "codex", "")
    mini = next(r for r in listed if r["name"] == "mini-swe-agent")
    assert (mini["kind"], mini["extra"], mini["missing_here"]) == ("mini-swe-agent", "mini", [])
    # No agent CLI on this PATH; the project's ./.agents (where .ci/run installs codex and claude)
    # is looked in too, so the one said missing is opencode, which nothing here installs.
    text = benchtui("runners", cwd=tmp_path, env={"PATH": "/usr/bin:/bin"})
    assert text.returncode == 0 and "opencode" in text.stdout
    assert "opencode             not here: agent CLI: 'opencode' not found" in text.stdout
    path = write_campaign(tmp_path)
    check = benchtui("check", path, cwd=tmp_path)
    assert "shipped runner profiles" in check.stdout and "mini-swe-agent       would run here" in check.stdout
