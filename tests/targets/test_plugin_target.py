"""A target kind from another distribution (tests/fixtures/plugin_target: `benchtui-parity-target`,
its `parity` kind a `benchtui.targets` entry point), installed as a distribution and found through
importlib.metadata, never imported by path: a fake-runner campaign and a command-runner campaign
run on it end to end, its verdicts in the results files, the report (text and JSON) and the
TUI's detail pane; an unknown kind is one line naming the installed ones, a broken entry point
one line; each exit 2 with nothing written."""

from __future__ import annotations

import importlib
import json
import sys
from importlib.metadata import entry_points
from pathlib import Path

import pytest
import tomli_w
from support import assert_one_line_error, benchtui, campaign_toml
from support.mini import RULE, journal, outcome_rows, pred_on_path
from support.plugin import install
from support.real_parts import require_tools
from support.script_agent import script_campaign
from support.scripted_upstream import ScriptedUpstream
from support.tui import SIZE, until

from benchtui.core import registry
from benchtui.engine import run as engine
from benchtui.ui.app import make_app
from benchtui.ui.screens.main import MainScreen

VERIFIER = "benchtui_parity (n mod modulus)"
INSTALLED = "broken, command, none, parity, problem-reductions"


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """The plugin installed in a folder of its own, on this process's sys.path (a subprocess gets
    it as PYTHONPATH: `env(site)`)."""
    folder = install(tmp_path_factory.mktemp("site-packages"))
    sys.path.insert(0, str(folder))
    importlib.invalidate_caches()
    yield folder
    sys.path.remove(str(folder))
    sys.modules.pop("benchtui_parity", None)


def env(site: Path) -> dict[str, str]:
    return {"PYTHONPATH": str(site)}


def fake_campaign(tmp_path: Path, **target: object) -> Path:
    text = campaign_toml(sessions=2, models=("fake/model-a", "fake/model-b"), total="1.0", per_session="0.1")
    text = text.replace("[runners.fake]\n", '[runners.fake]\nbug_sessions = { "fake/model-a" = [1] }\n')
    (tmp_path / "target").mkdir(exist_ok=True)
    path = tmp_path / "parity.toml"
    path.write_text(text + "\n" + tomli_w.dumps({"target": {"kind": "parity", **target}}))
    return path


def test_it_is_found_through_its_entry_point_not_by_path(site):
    (point,) = entry_points(group="benchtui.targets", name="parity")
    assert point.dist is not None and point.dist.name == "benchtui-parity-target"
    assert Path(point.dist.locate_file("benchtui_parity")).parent == site
    assert registry.TARGETS.available() == INSTALLED.split(", ")
    cls = registry.target_class("parity")
    assert cls.__module__ == "benchtui_parity" and cls.verifies
    profile = registry.validate_target({"kind": "parity", "modulus": 3})
    assert registry.create_target(profile).profile == profile


def test_without_the_distribution_the_kind_is_unknown(tmp_path, site):
    path = fake_campaign(tmp_path)
    done = benchtui("--no-ui", path, "--state-dir", tmp_path / "runs", cwd=tmp_path)  # no PYTHONPATH
    assert_one_line_error(done, "unknown target kind 'parity' (installed: command, none, problem-reductions)")
    assert not (tmp_path / "runs").exists()


def test_a_fake_runner_campaign_on_it(tmp_path, site):
    path = fake_campaign(tmp_path, modulus=3)
    done = benchtui("--no-ui", path, "--state-dir", tmp_path / "runs", cwd=tmp_path, env=env(site))
    assert done.returncode == 0, done.stderr
    run_dir = tmp_path / "runs" / "t"
    frozen = (run_dir / "campaign.toml").read_text()
    assert '[target]\nkind = "parity"\nmodulus = 3\n' in frozen  # its profile, validated and kept
    assert "target" in json.loads((run_dir / "identity.json").read_text())
    # The fake runner's certificates stay its claims, whatever the target verifies.
    rows = json.loads((run_dir / "results" / "fake_model-a.json").read_text())["results"]
    claimed = [r for r in rows if r["result"] == "bug_found"]
    assert len(claimed) == 1 and claimed[0]["verify_details"]["judged_by"] == "runner"
    report = json.loads(benchtui("report", run_dir, "--format", "json", cwd=tmp_path, env=env(site)).stdout)
    model = next(m for m in report["models"] if m["model"] == "fake/model-a")
    assert (model["bugs"], model["verified_bugs"], model["certificates"]["claimed"]) == (1, 0, 1)
    text = benchtui("report", run_dir, cwd=tmp_path, env=env(site))
    assert text.returncode == 0 and "fake/model-a" in text.stdout
    # ...and its profile is checked as the plugin says (pydantic, one line).
    bad = fake_campaign(tmp_path, modulus=1)
    refused = benchtui("--no-ui", bad, "--state-dir", tmp_path / "other", cwd=tmp_path, env=env(site))
    assert_one_line_error(refused, "target: modulus: Input should be greater than or equal to 2")
    assert not (tmp_path / "other").exists()


def test_an_unknown_kind_is_one_line_naming_the_installed_ones(tmp_path, site):
    path = fake_campaign(tmp_path)
    path.write_text(path.read_text().replace('kind = "parity"', 'kind = "parity2"'))
    for argv in (["--no-ui", path, "--state-dir", tmp_path / "runs"], ["check", path]):
        done = benchtui(*argv, cwd=tmp_path, env=env(site))
        assert_one_line_error(done, f"unknown target kind 'parity2' (installed: {INSTALLED})")
    assert not (tmp_path / "runs").exists()


def test_a_broken_entry_point_is_one_line(tmp_path, site):
    path = fake_campaign(tmp_path)
    path.write_text(path.read_text().replace('kind = "parity"', 'kind = "broken"'))
    for argv in (["--no-ui", path, "--state-dir", tmp_path / "runs"], ["check", path]):
        done = benchtui(*argv, cwd=tmp_path, env=env(site))
        assert_one_line_error(
            done,
            "cannot load target kind 'broken' (benchtui_parity_gone:Target): "
            "No module named 'benchtui_parity_gone'",
        )
    assert not (tmp_path / "runs").exists()


# -- a command runner's agents hunting in it, watched in the TUI ------------------------------------
# Each agent prints one certificate: `odd` a number 2 does not divide (a bug), `even` one it does.
AGENT = (
    'case "$1" in odd) n=3;; *) n=4;; esac; '
    'echo CERTIFICATE_START; echo "{\\"rule\\": \\"' + RULE + '\\", \\"n\\": $n}"; echo CERTIFICATE_END'
)


@pytest.fixture
def anyio_backend():
    return "asyncio"


@pytest.fixture
def agents(tmp_path, monkeypatch):
    require_tools("bwrap", "socat")  # the agents run in bubblewrap, behind socat
    pred_on_path(tmp_path, monkeypatch)
    monkeypatch.setenv("SCRIPTED_API_KEY", "sk-scripted")


@pytest.mark.anyio
async def test_a_command_runner_campaign_on_it_in_the_tui(tmp_path, site, agents):
    with ScriptedUpstream() as up:
        path = script_campaign(
            tmp_path, up.url, AGENT, models=("openai/odd", "openai/even"), target={"kind": "parity"}
        )
        app = make_app(engine.prepare(engine.Options(path, tmp_path / "runs")))
        async with app.run_test(size=SIZE) as pilot:
            await until(pilot, lambda: app.finished, timeout=180, what="the campaign's end")
            await pilot.press("escape")  # the summary, back to the sessions
            await until(pilot, lambda: isinstance(app.screen, MainScreen), what="the main screen")
            panes = {}
            for _ in range(2):
                await until(pilot, lambda: "verifier:" in app.main.detail.render().plain, what="a verdict")
                panes[app.main.table.selected] = app.main.detail.render().plain
                await pilot.press("down")
    run_dir = app.prep.run_dir
    sessions = {r["model"]: r["session"] for r in journal(run_dir).values()}
    odd, even = sessions["openai/odd"], sessions["openai/even"]
    assert "verifier: accepted (violation), 3 leaves 1 modulo 2" in panes[odd], panes
    assert "verifier: rejected (no_violation), 2 divides 4" in panes[even], panes
    # its verdicts as the run dir keeps them
    details = {row["session"]: row["verify_details"] for row in outcome_rows(run_dir)}
    assert details[odd]["verifier"] == VERIFIER and details[odd]["found_by"] == "parity oracle"
    assert details[odd]["details"] == {"n": 3, "remainder": 1} and details[even]["cause"] == "no_violation"
    for model, result in [("odd", "bug_found"), ("even", "rejected")]:
        (row,) = json.loads((run_dir / "results" / f"openai_{model}.json").read_text())["results"]
        assert row["result"] == result and row["verify_details"]["verifier"] == VERIFIER
    # and as the report counts them
    report = json.loads(benchtui("report", run_dir, "--format", "json", cwd=tmp_path, env=env(site)).stdout)
    models = {m["model"]: m for m in report["models"]}
    assert (
        models["openai/odd"]["verified_bugs"] == 1 and models["openai/odd"]["certificates"]["confirmed"] == 1
    )
    assert (
        models["openai/even"]["verified_bugs"] == 0 and models["openai/even"]["certificates"]["rejected"] == 1
    )
    text = benchtui("report", run_dir, cwd=tmp_path, env=env(site))
    assert text.returncode == 0 and "openai/odd" in text.stdout, text.stderr
