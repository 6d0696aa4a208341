"""One truth for a bug: one count in the results files, the report and the TUI; off-task
certificates; claimed vs verified; trials; the paired test, Holm, shared ranks and the matrix."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import trio
from scipy.stats import binomtest, fisher_exact
from support import ROOT
from support.report import run_campaign
from support.transcripts import need_transcripts, replaying_pred

from benchtui.cli import main as cli
from benchtui.engine import events as ev
from benchtui.engine import run as engine
from benchtui.report import build, stats
from benchtui.report.leaderboard import Comparison, shared_ranks
from benchtui.report.text import leaderboard_row, render


def report_json(capsys, *argv) -> dict:
    assert cli.main(["report", *map(str, argv), "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)


TASKS = ["binpacking_ilp", "knapsack_ilp", "minimumvertexcover_ensemblecomputation"]
BIN, KNAP, MVC = (f"{t}.{k}.json" for t, k in zip(TASKS, ("bug", "correct", "bug"), strict=True))


def judged_run(tmp_path: Path) -> Path:
    """Real certificates, judged by the pred verifier against the v0.5.0 release's answers:
    model-a: its binpacking task a bug, its knapsack task an (accepted) MVC certificate, i.e.
    off its task, its MVC task nothing; model-b: bug, rejected, bug."""
    folder = need_transcripts() / "certificates"
    pred = replaying_pred(tmp_path / "bin", "v0.5.0")
    submits = {
        "fake/model-a#0": [BIN],
        "fake/model-a#1": [MVC],
        "fake/model-b#0": [BIN],
        "fake/model-b#1": [KNAP],
        "fake/model-b#2": [MVC],
    }
    table = "\n".join(f'"{k}" = {json.dumps(v)}' for k, v in submits.items())
    extra = (
        f'[runners.judge]\nkind = "support.report:JudgingRunner"\npred = "{pred}"\n'
        f'certificates = "{folder}"\n[runners.judge.submits]\n{table}\n'
    )
    return run_campaign(tmp_path, n=3, cap="1", total="2", runner="judge", extra=extra, tasks=TASKS)


def test_the_results_files_the_report_and_the_tui_count_the_same_bugs(tmp_path, capsys):
    run_dir = judged_run(tmp_path)
    results = {
        json.loads(p.read_text())["model"]: json.loads(p.read_text())
        for p in (run_dir / "results").glob("*.json")
    }
    report = report_json(capsys, run_dir)
    models = {m["model"]: m for m in report["models"]}
    tui = {m.model: leaderboard_row(1, m)[4] for m in build([run_dir]).models}  # the TUI's cells
    assert {m: r["bugs_found"] for m, r in results.items()} == {"fake/model-a": 1, "fake/model-b": 2}
    assert {m: r["verified_bugs"] for m, r in models.items()} == {"fake/model-a": 1, "fake/model-b": 2}
    assert tui == {"fake/model-a": "1", "fake/model-b": "2"}
    assert report["ranked_by"] == "verified_bugs"
    a = models["fake/model-a"]
    assert a["verified_rules"] == ["binpacking_ilp"] and a["judged_by"] == "verifier"
    assert a["certificates"]["off_task"] == 1 and a["certificates"]["confirmed"] == 1
    assert a["bug_rate"]["hits"] == 1  # the off-task session is no bug
    (off,) = [r for r in results["fake/model-a"]["results"] if r["rule"] == "knapsack_ilp"]
    assert off["result"] == "rejected" and off["reject_reason"].startswith("off_task: ")
    assert report["matrix"] == {
        "tasks": TASKS,
        "cells": {
            "fake/model-a": ["bug", "rejected", "no_certificate"],
            "fake/model-b": ["bug", "rejected", "bug"],
        },
    }


def test_an_on_task_certificate_after_an_off_task_one_is_still_the_sessions_bug(tmp_path):
    from support.judging import pred_verification, report_of
    from support.report import JudgingProfile, JudgingRunner

    from benchtui.runners.kit.verdict import judge

    folder = need_transcripts() / "certificates"
    blocks = [(folder / MVC).read_text(), (folder / BIN).read_text()]
    pred = str(replaying_pred(tmp_path / "bin", "v0.5.0"))
    assert JudgingRunner(JudgingProfile(pred=pred, certificates=str(folder)), run_dir=tmp_path)
    how = pred_verification(tmp_path / "c.json", pred, max_certificates=3, task="binpacking_ilp")
    outcome = trio.run(lambda: judge(report_of(*blocks, exit_status=""), how, fingerprint=""))
    assert outcome.result == "bug_found" and outcome.certificate["rule"] == "binpacking_ilp"
    assert [c.to_json()["status"] for c in outcome.judgement.checked] == ["off_task", "accepted"]


def test_fake_claims_are_claimed_never_confirmed_and_the_ranking_says_so(tmp_path, capsys):
    run_dir = run_campaign(
        tmp_path,
        tasks=["r1", "r2"],
        n=4,
        cap="1",
        total="2",
        bugs={"fake/model-a": [0, 2], "fake/model-b": [1]},
    )
    report = report_json(capsys, run_dir)
    assert report["ranked_by"] == "bugs"
    models = {m["model"]: m for m in report["models"]}
    a = models["fake/model-a"]
    assert (a["verified_bugs"], a["bugs"], a["judged_by"]) == (0, 1, "runner")  # r1 twice: one rule
    assert a["certificates"]["claimed"] == 2 and a["certificates"]["confirmed"] == 0
    assert a["bug_rules"] == ["r1"]
    rows = [json.loads(p.read_text()) for p in sorted((run_dir / "results").glob("*.json"))]
    certs = [r["certificate"] for doc in rows for r in doc["results"] if "certificate" in r]
    assert sorted(c["rule"] for c in certs) == ["r1", "r1", "r2"]  # the session's task, exactly
    bug_sessions = sorted(
        (doc["model"], r["session"]) for doc in rows for r in doc["results"] if r["result"] == "bug_found"
    )
    assert bug_sessions == [
        ("fake/model-a", "fake_model-a-0000"),
        ("fake/model-a", "fake_model-a-0002"),
        ("fake/model-b", "fake_model-b-0001"),
    ]
    assert cli.main(["report", str(run_dir)]) == 0
    text = capsys.readouterr().out
    assert "ranked by bugs the runner claimed (fake: it has no verifier, so no bug is confirmed" in text
    assert "1 claimed" in text
    # Per-bug cost only with a bug: a claim is never a verified bug, so none per verified bug.
    assert a["usd_per_verified_bug"] is None and a["usd_per_bug"] == pytest.approx(a["spent_usd"])


def test_sessions_without_a_model_answer_are_not_trials(tmp_path, capsys):
    down = '[runners.flaky]\nkind = "support.report:ProviderRunner"\ndown = ["fake/model-b"]\n'
    run_dir = run_campaign(tmp_path, n=4, cap="1", total="2", runner="flaky", extra=down, finished=False)
    report = report_json(capsys, run_dir)
    b = next(m for m in report["models"] if m["model"] == "fake/model-b")
    assert b["ran"] == 3 and b["infra_errors"] == 3  # the circuit breaker left the 4th pending
    assert b["bug_rate"] == {  # not "0% [0%, 49%]"
        **b["bug_rate"],
        **{"hits": 0, "trials": 0, "value": None, "ci95": None, "clusters": 0, "ci95_unclustered": None},
    }
    assert any(f.startswith("infrastructure errors") for f in report["fairness"]["findings"])
    assert cli.main(["report", str(run_dir)]) == 0
    assert "infra" in capsys.readouterr().out


def test_paired_tasks_get_the_exact_mcnemar_test_and_holm(tmp_path, capsys):
    # Ten tasks; A finds bugs in 0..5, B in 0 only: 5 discordant pairs, all A's way.
    tasks = [f"r{i}" for i in range(10)]
    run_dir = run_campaign(
        tmp_path,
        tasks=tasks,
        n=10,
        cap="1",
        total="2",
        bugs={"fake/model-a": [0, 1, 2, 3, 4, 5], "fake/model-b": [0]},
    )
    report = report_json(capsys, run_dir)
    (c,) = report["comparisons"]
    assert c["test"] == "mcnemar_exact" and c["pairs"] == 10 and c["discordant"] == [5, 0]
    assert c["p_value"] == pytest.approx(binomtest(5, 5, 0.5).pvalue) == pytest.approx(0.0625)
    assert c["p_adjusted"] == pytest.approx(c["p_value"])  # one pair: Holm changes nothing
    assert c["separable"] is False
    # Not separable: one shared rank, though A has more bugs.
    assert [m["rank"] for m in report["models"]] == [1, 1]
    (tmp_path / "u").mkdir()
    unpaired = report_json(
        capsys,
        run_campaign(
            tmp_path / "u",
            n=10,
            cap="1",
            total="2",
            bugs={"fake/model-a": [0, 1, 2, 3, 4, 5], "fake/model-b": [0]},
        ),
    )
    (f,) = unpaired["comparisons"]
    assert f["test"] == "fisher_exact" and "pairs" not in f
    assert f["p_value"] == pytest.approx(fisher_exact([[6, 4], [1, 9]]).pvalue)
    assert cli.main(["report", str(run_dir)]) == 0
    text = capsys.readouterr().out
    assert "exact McNemar over 10 task pairs (discordant 5/0)" in text and "Task × model" in text
    assert cli.main(["report", str(run_dir), "--format", "html"]) == 0
    assert 'id="matrix"' in capsys.readouterr().out


def test_holm_adjusts_over_the_pairs_and_ranks_are_shared_where_the_data_cannot_separate():
    adjusted = stats.holm([0.01, 0.04, 0.03, None])
    assert adjusted[:3] == pytest.approx([0.03, 0.06, 0.06]) and adjusted[3] is None
    assert stats.mcnemar_exact_p(0, 0) == 1.0

    class M:
        def __init__(self, model):
            self.model = model

    a, b, c = M("a"), M("b"), M("c")
    # a beats c (separable), a vs b and b vs c cannot be told apart.
    comps = [
        Comparison("a", "b", 0.1, 0.2, p_adjusted=0.4),
        Comparison("a", "c", 0.5, 0.001, p_adjusted=0.003),
        Comparison("b", "c", 0.4, 0.04, p_adjusted=0.08),
    ]
    assert shared_ranks([a, b, c], comps) == [1, 1, 2]
    # Unadjusted, b vs c (p 0.04) would have separated them: Holm keeps b and c together.
    assert comps[2].separable is False


def _shipped(tmp_path: Path, name: str) -> Path:
    """A shipped campaign as shipped (budget, models, prices, limits, tasks), with its runner a
    $0.01 stand-in that reports per-task prompts (as the mini runner does) and its target a folder."""
    text = (ROOT / "campaigns" / name).read_text()
    models = [line.split('"')[1] for line in text.splitlines() if line.startswith("name = ") and "/" in line]
    prompts = ", ".join(f'"{m}" = "the-prompt"' for m in models)
    text = text.replace('runner = "mini"', 'runner = "stand-in"')
    text = text.replace('path = "../../problem-reductions"', 'path = "target"').replace(
        'tools = ["pred"]', "tools = []"
    )
    text += f'\n[runners.stand-in]\nkind = "support.report:ProviderRunner"\nper_task = true\nprompts = {{ {prompts} }}\n'
    (tmp_path / "target").mkdir()
    path = tmp_path / name
    path.write_text(text)
    return path


@pytest.mark.parametrize("name", ["problem-reductions.toml", "problem-reductions-logical.toml"])
def test_the_shipped_problem_reductions_campaigns_end_fair(tmp_path, capsys, name):
    prep = engine.prepare(engine.Options(_shipped(tmp_path, name), tmp_path / "runs"))
    try:
        assert trio.run(engine.run, prep, ev.EventBus()) is True
    finally:
        prep.lock.release()
    report = build([prep.run_dir])
    assert report.fairness.fair, report.fairness.findings
    assert all(a.prompt_summary()["tasks"] == 10 for a in report.fairness.models)
    assert "UNFAIR" not in render(report)


def test_the_shipped_play_campaign_ends_fair_its_budget_skips_a_note(tmp_path, capsys):
    text = (ROOT / "campaigns" / "play.toml").read_text().replace("step_s = 3.0", "step_s = 0.01")
    shutil.copytree(ROOT / "campaigns" / "fake-target", tmp_path / "fake-target")
    (tmp_path / "play.toml").write_text(text)
    prep = engine.prepare(engine.Options(tmp_path / "play.toml", tmp_path / "runs"))
    try:
        trio.run(engine.run, prep, ev.EventBus())
    finally:
        prep.lock.release()
    report = build([prep.run_dir])
    assert report.fairness.fair, report.fairness.findings
    skipped = sum(a.skipped_budget for a in report.fairness.models)
    if skipped:
        assert report.fairness.notes and "leaves the comparison equal" in report.fairness.notes[0]


PRICED = '[runners.priced]\nkind = "support.report:PricedRunner"\ninput_tokens = 1000\n'


def test_budget_skips_that_leave_models_on_different_tasks_are_a_finding(tmp_path, capsys):
    # model-b's price is 10/Mtok: its sessions cost $0.01, model-a's $0.003; a cap of $0.04 runs
    # every session of model-a and four of model-b: with tasks, b is compared on fewer tasks.
    kw = dict(n=6, cap="0.04", total="2", runner="priced", extra=PRICED, input_b="10.0")
    run_dir = run_campaign(tmp_path, tasks=["r1", "r2", "r3"], **kw)
    audit = report_json(capsys, run_dir)["fairness"]
    skipped = {m["model"]: m["skipped_budget"]["sessions"] for m in audit["models"]}
    assert skipped["fake/model-a"] == 0 and skipped["fake/model-b"] >= 2
    skip = [f for f in audit["findings"] if f.startswith("skipped for budget")]
    assert skip and "fake/model-b ($10/$15 per Mtok in/out) ran fewer tasks" in skip[0]
    assert "compared on different tasks" in skip[0] and "raise total_usd" in skip[0]
    # Without tasks every session repeats the same hunt: a note, not a finding.
    (tmp_path / "plain").mkdir()
    audit = report_json(capsys, run_campaign(tmp_path / "plain", **kw))["fairness"]
    assert audit["fair"] is True, audit["findings"]
    assert audit["notes"] and "leaves the comparison equal" in audit["notes"][0]
