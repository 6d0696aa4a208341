"""`benchtui report`: counts that match the journal exactly, honest intervals and p-values, pooling
of runs of one campaign, and a report that never writes into the run dirs it reads."""

from __future__ import annotations

import json
import math
from collections import Counter

import pytest
from scipy.stats import fisher_exact
from support import journal, last_states
from support.report import run_campaign

from benchtui.cli import main as cli
from benchtui.report import build
from benchtui.report.text import render as render_text


def report_json(capsys, *argv) -> dict:
    assert cli.main(["report", *map(str, argv), "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)


def wilson(k: int, n: int, z: float = 1.959963984540054) -> tuple[float, float]:
    """The textbook Wilson score interval, written out here to check the library's."""
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return centre - half, centre + half


def test_counts_match_the_journal_and_the_statistics_match_scipy(tmp_path, capsys):
    # A finds bugs in 5 of its sessions, B in 1; each model's cap buys 7 of its 8 sessions.
    run_dir = run_campaign(tmp_path, bugs={"fake/model-a": [0, 2, 3, 5, 6], "fake/model-b": [1]})
    report = report_json(capsys, run_dir)
    last = last_states(run_dir)
    by_model = {m["model"]: m for m in report["models"]}
    assert set(by_model) == {"fake/model-a", "fake/model-b"}
    for model, row in by_model.items():
        mine = [r for r in last.values() if r["model"] == model]
        states = Counter(r["state"] for r in mine)
        ran = [r for r in mine if r["state"] in ("done", "error", "killed")]
        hits = sum(r.get("result") == "bug_found" for r in ran)
        assert row["planned"] == len(mine) == 8
        assert (row["done"], row["skipped_budget"], row["error"], row["killed"]) == (
            states["done"],
            states["skipped_budget"],
            states["error"],
            states["killed"],
        )
        assert row["ran"] == len(ran) == 7
        assert row["certificates"]["claimed"] == sum(bool(r.get("certificate")) for r in ran) == hits
        assert row["certificates"]["confirmed"] == 0 and row["judged_by"] == "runner"  # a fake claims
        assert row["bug_rate"]["hits"] == hits and row["bug_rate"]["trials"] == len(ran)
        assert row["bug_rate"]["value"] == pytest.approx(hits / len(ran))
        low, high = row["bug_rate"]["ci95"]
        assert low <= row["bug_rate"]["value"] <= high
        assert (low, high) == pytest.approx(wilson(hits, len(ran)))
        spent = sum(
            r["cost_usd"] for r in journal(run_dir) if r["model"] == model and r["state"] != "running"
        )
        assert row["spent_usd"] == pytest.approx(spent)
    assert (
        by_model["fake/model-a"]["bug_rate"]["hits"] == 5
        and by_model["fake/model-b"]["bug_rate"]["hits"] == 1
    )
    assert [m["model"] for m in report["models"]] == ["fake/model-a", "fake/model-b"]  # A ranks first
    (cmp,) = report["comparisons"]
    table = [[5, 2], [1, 6]]
    assert cmp["test"] == "fisher_exact"
    assert cmp["p_value"] == pytest.approx(fisher_exact(table).pvalue, rel=1e-12)
    assert cmp["separable"] is (cmp["p_value"] < 0.05)
    assert report["fairness"] == {**report["fairness"], "fair": True, "findings": []}


def test_verified_bugs_count_distinct_rules(tmp_path, capsys):
    # tasks r1, r2, r3 twice each: A's bugs are r1 twice (one rule), B's are r1 and r2 (two rules).
    tasks = ["r1", "r2", "r3"]
    run_dir = run_campaign(
        tmp_path, tasks=tasks, n=6, cap="1", total="2", bugs={"fake/model-a": [0, 3], "fake/model-b": [0, 1]}
    )
    by_model = {m["model"]: m for m in report_json(capsys, run_dir)["models"]}
    # The fake runner has no verifier: its bugs are claims (`bugs`), never verified ones.
    assert by_model["fake/model-a"]["verified_bugs"] == 0 and by_model["fake/model-a"]["bugs"] == 1
    assert (
        by_model["fake/model-a"]["bug_rules"] == ["r1"] and by_model["fake/model-a"]["judged_by"] == "runner"
    )
    assert by_model["fake/model-b"]["bug_rules"] == ["r1", "r2"]
    assert by_model["fake/model-a"]["bug_rate"]["hits"] == by_model["fake/model-b"]["bug_rate"]["hits"] == 2
    assert by_model["fake/model-a"]["usd_per_bug"] == pytest.approx(0.06)  # per claimed rule
    assert by_model["fake/model-b"]["usd_per_bug"] == pytest.approx(0.03)
    assert by_model["fake/model-a"]["usd_per_verified_bug"] is None  # no verified bug: no cost per one


def test_runs_of_one_campaign_pool_and_runs_given_different_things_are_refused(tmp_path, capsys):
    bugs = {"fake/model-a": [0], "fake/model-b": []}
    first = run_campaign(tmp_path, bugs=bugs)
    second = run_campaign(tmp_path, bugs=bugs, fresh=True)  # the first is moved aside
    aside = next(p for p in (tmp_path / "runs").iterdir() if p.name.startswith("t.") and p.is_dir())
    assert second == first
    pooled = report_json(capsys, aside, second)
    by_model = {m["model"]: m for m in pooled["models"]}
    assert by_model["fake/model-a"]["planned"] == 16 and by_model["fake/model-a"]["ran"] == 14
    assert by_model["fake/model-a"]["bug_rate"]["hits"] == 2
    assert pooled["runs"] == [str(aside), str(second)]
    assert report_json(capsys, second, second)["models"][0]["planned"] == 8  # a run given twice counts once
    other = tmp_path / "other"
    other.mkdir()
    # Another cap (what a model may spend in all) leaves each session's budget as it was: pooled.
    poorer = run_campaign(other, bugs=bugs, cap="0.05")
    assert report_json(capsys, second, poorer)["fairness"]["findings"] == []
    (tmp_path / "dearer").mkdir()
    dearer = run_campaign(tmp_path / "dearer", bugs=bugs, input_b="4.0")  # B re-priced: not the same model
    assert cli.main(["report", str(second), str(dearer)]) == 2
    err = capsys.readouterr().err
    assert (
        err.count("\n") == 1
        and "cannot pool" in err
        and "model fake/model-b: input_usd_per_mtok 3 vs 4" in err
    )


def test_report_never_writes_into_the_run_dir(tmp_path, capsys):
    run_dir = run_campaign(tmp_path, bugs={"fake/model-a": [1]})

    def snapshot() -> dict[str, tuple[int, int]]:
        return {str(p): (p.stat().st_mtime_ns, p.stat().st_size) for p in run_dir.rglob("*")}

    before = snapshot()
    for fmt in ("text", "json", "html"):
        assert cli.main(["report", str(run_dir), "--format", fmt]) == 0
    out = tmp_path / "report.html"
    assert cli.main(["report", str(run_dir), "--format", "html", "-o", str(out)]) == 0
    assert out.read_text().startswith("<!DOCTYPE html>")
    assert cli.main(["report", str(run_dir), "-o", str(run_dir / "report.txt")]) == 2  # refused
    assert snapshot() == before


def test_text_report_says_when_the_data_cannot_separate_models(tmp_path):
    run_dir = run_campaign(tmp_path, bugs={"fake/model-a": [0, 1, 2], "fake/model-b": [0]})
    text = render_text(build([run_dir]))
    assert "fake/model-a vs fake/model-b" in text and "cannot separate" in text  # 3/7 vs 1/7: p = 0.56
    assert "Fairness audit: fair" in text


def test_the_report_imports_no_tui_and_no_model_client(tmp_path):
    """`benchtui report` is engine-side: no textual, litellm or minisweagent, even for HTML."""
    import subprocess
    import sys

    run_dir = run_campaign(tmp_path, bugs={"fake/model-a": [0]})
    code = (
        "import sys; from benchtui.cli.main import main; main(['report', sys.argv[1], '--format', 'html', "
        "'-o', sys.argv[2]]); print(sorted({m.split('.')[0] for m in sys.modules} & "
        "{'textual', 'litellm', 'minisweagent'}))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(run_dir), str(tmp_path / "r.html")],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert out.strip() == "[]"


def test_plot_curves_end_at_the_leaderboards_spend_and_bugs(tmp_path):
    tasks = ["r1", "r2", "r3"]
    run_dir = run_campaign(
        tmp_path, tasks=tasks, n=6, cap="1", total="2", bugs={"fake/model-a": [0, 1, 3], "fake/model-b": [2]}
    )
    report = build([run_dir])
    curves = report.curves()
    for m in report.models:
        points = curves[m.model]
        assert points[-1].spent_usd == pytest.approx(float(m.spent_usd))
        assert (
            points[-1].verified_bugs == len(m.rules) == m.bugs
        )  # the counted bugs (claims of the fake); a: r1, r2 (r1 twice); b: r3
        assert [p.elapsed_s for p in points] == sorted(p.elapsed_s for p in points)
        assert [p.spent_usd for p in points] == sorted(p.spent_usd for p in points)
    assert {m.model: m.bugs for m in report.models} == {"fake/model-a": 2, "fake/model-b": 1}
