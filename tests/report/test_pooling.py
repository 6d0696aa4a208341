"""`benchtui report RUN_DIR...` pools runs of different campaigns when their sessions were given
the same (target and pred, per-task prompts, per-session money and logical budgets, runner kind
and profile, protocol, action format), refuses naming the difference otherwise, and pools anyway
on request with each difference a finding. A model's repeated runs are more trials of it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import trio
from support.targeted import KIND, fake_pred, on_path

from benchtui.cli import main as cli
from benchtui.core.errors import BadInput
from benchtui.engine import events as ev
from benchtui.engine import run as engine
from benchtui.report import build

TASKS = ["r1", "r2", "r3", "r4"]


def campaign_file(
    folder: Path,
    name: str,
    models: list[str],
    *,
    runner: str = "",
    per_session: str = "0.01",
    sessions: str = f"tasks = {json.dumps(TASKS)}",
    total: str = "1",
    logical: str = "",
) -> Path:
    """A campaign in `folder` on the shared target `folder/../target`; every campaign's fake
    profile names the same bugs (profile content is part of what must be equal)."""
    runner = runner or (
        '[runners.fake]\nkind = "fake"\ncost_usd = 0.01\n'
        'bug_sessions = { "vendor/a" = [0, 1], "vendor/b" = [1], "vendor/c" = [0, 1, 2], "vendor/d" = [0, 5, 6, 7] }\n'
    )
    active = runner.split("[runners.", 1)[1].split("]", 1)[0]
    tables = "".join(
        f'\n[[models]]\nname = "{m}"\ninput_usd_per_mtok = 3.0\noutput_usd_per_mtok = 15.0\n' for m in models
    )
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.toml"
    path.write_text(
        f'name = "{name}"\n{sessions}\nrunner = "{active}"\n\n[budget]\ntotal_usd = {total}\n'
        f'per_session_usd = {per_session}\n{logical}\n{runner}{tables}\n[environment]\npath = "../target"\n'
    )
    return path


def run(path: Path) -> Path:
    (path.parent.parent / "target").mkdir(exist_ok=True)
    prep = engine.prepare(engine.Options(path, path.parent / "runs"))
    with prep:
        assert trio.run(engine.run, prep, ev.EventBus())
    return prep.run_dir


def test_two_campaigns_given_the_same_pool_with_paired_tests_on_the_tasks_both_ran(tmp_path, capsys):
    month1 = run(campaign_file(tmp_path / "m1", "jan", ["vendor/a", "vendor/b"]))
    month2 = run(campaign_file(tmp_path / "m2", "feb", ["vendor/c"], total="2"))  # other total: no matter
    assert cli.main(["report", str(month1), str(month2), "--format", "json"]) == 0
    report = json.loads(capsys.readouterr().out)
    by_model = {m["model"]: m for m in report["models"]}
    assert set(by_model) == {"vendor/a", "vendor/b", "vendor/c"}
    assert by_model["vendor/c"]["bug_rate"]["hits"] == 3 and by_model["vendor/c"]["ran"] == 4
    comparisons = {(c["a"], c["b"]): c for c in report["comparisons"]}
    assert {c["test"] for c in comparisons.values()} == {"mcnemar_exact"}
    assert all(c["pairs"] == 4 for c in comparisons.values())  # the four tasks, paired across runs
    a_c = comparisons.get(("vendor/c", "vendor/a")) or comparisons[("vendor/a", "vendor/c")]
    assert sorted(a_c["discordant"]) == [0, 1]  # only c found r3's bug
    assert report["fairness"]["findings"] == [] and report["fairness"]["fair"] is True
    assert [d["campaign"] for d in report["run_details"]] == ["jan", "feb"]
    assert report["matrix"]["tasks"] == TASKS and set(report["matrix"]["cells"]) == set(by_model)


def test_repeated_runs_of_a_model_pool_as_more_trials_never_its_best(tmp_path):
    once = run(campaign_file(tmp_path / "m1", "one", ["vendor/d"], sessions="sessions_per_model = 4"))
    again = run(campaign_file(tmp_path / "m2", "two", ["vendor/d"], sessions="sessions_per_model = 8"))
    (row,) = build([once, again]).models
    # 1 of 4, then 4 of 8: pooled 5 of 12 (its best run alone would say 1 in 2).
    assert (row.bug_rate.hits, row.bug_rate.trials, row.planned) == (5, 12, 12)


def test_another_pred_pools_only_anyway_and_then_it_is_a_finding(tmp_path, monkeypatch, capsys):
    folder = tmp_path / "bin"
    on_path(folder, monkeypatch)
    runner = f'[runners.t]\nkind = "{KIND}"\ncost_usd = 0.01\n'
    fake_pred(folder, "build one")
    month1 = run(campaign_file(tmp_path / "m1", "jan", ["vendor/a"], runner=runner))
    fake_pred(folder, "build two")  # prints the same version: the binary differs
    month2 = run(campaign_file(tmp_path / "m2", "feb", ["vendor/c"], runner=runner))
    assert cli.main(["report", str(month1), str(month2)]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert (
        f"cannot pool {month1} and {month2}: their sessions were not given the same: pred: pred 0.5.0@sha256:"
        in line
    )
    assert "--pool-anyway pools them" in line
    assert cli.main(["report", str(month1), str(month2), "--pool-anyway", "--format", "json"]) == 0
    fairness = json.loads(capsys.readouterr().out)["fairness"]
    (finding,) = fairness["findings"]
    assert finding.startswith("pooled anyway: pred: pred 0.5.0@sha256:") and fairness["fair"] is False
    assert cli.main(["report", str(month1), str(month2), "--pool-anyway"]) == 0
    assert "UNFAIR: 1 finding(s)" in capsys.readouterr().out


def differing(tmp_path: Path, first: dict, second: dict) -> str:
    month1 = run(campaign_file(tmp_path / "m1", "jan", ["vendor/a"], **first))
    month2 = run(campaign_file(tmp_path / "m2", "feb", ["vendor/c"], **second))
    with pytest.raises(BadInput) as refused:
        build([month1, month2])
    assert "\n" not in str(refused.value)
    pooled = build([month1, month2], pool_anyway=True)
    assert all(f.startswith("pooled anyway: ") for f in pooled.fairness.findings[:1])
    return str(refused.value)


def test_each_comparable_part_that_differs_is_named(tmp_path):
    assert "per-session money: $0.01 vs $0.02" in differing(tmp_path / "1", {}, {"per_session": "0.02"})
    logical = "[budget.per_session]\nmodel_calls = 3\n"
    assert "logical budgets: model_calls null vs 3 (" in differing(tmp_path / "2", {}, {"logical": logical})
    other = '[runners.fake]\nkind = "fake"\ncost_usd = 0.02\n'
    assert 'runner profile: cost_usd "0.01" vs "0.02", bug_sessions {' in differing(
        tmp_path / "3", {}, {"runner": other}
    )
    prompts = '[runners.p]\nkind = "support.report:ProviderRunner"\nper_task = true\nprompts = { "vendor/a" = "aaa", "vendor/c" = "ccc" }\n'
    told = differing(tmp_path / "4", {"runner": prompts}, {"runner": prompts})
    assert "prompt of task r1: aaa-r1 (" in told and "ccc-r1 (" in told
    assert "runner kind: fake vs support.report:ProviderRunner" in differing(
        tmp_path / "5", {}, {"runner": prompts}
    )


def test_the_action_format_is_named(tmp_path, monkeypatch):
    on_path(tmp_path / "bin", monkeypatch)
    fake_pred(tmp_path / "bin")
    runner = f'[runners.t]\nkind = "{KIND}"\ncost_usd = 0.01\naction_format = "{{}}"\n'
    told = differing(tmp_path, {"runner": runner.format("tool_call")}, {"runner": runner.format("text")})
    assert "action format: tool_call vs text (" in told and "runner profile" not in told
