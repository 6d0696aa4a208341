"""The report of Top50 runs: per model the N runs' verified distinct-rule bugs (mean with its
interval, distribution, bugs@10/25/50, first/second-attempt accepts, pred calls per bug, cap
hits) beside the benchmark's rule (its best run) and how much best-of-N inflates it; unfinished
runs are not counted, a run is counted once wherever its run dir lives, runs of campaigns pool."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from support import top50_stub

from benchtui.cli.main import main
from benchtui.report import build
from benchtui.report.runs_top50 import ModelRuns

LOCAL = {"library_commit": "8df8ac04" + "0" * 32, "pred_version": "0.5.0"}
RUNS = {
    # model-a: 3 bugs (one at a second submit) and 1 bug with every episode at its generation cap
    "vendor/model-a#0": {"accepted": {"3": 1, "12": 2, "40": 1}, "pred_calls": 4},
    "vendor/model-a#1": {"accepted": {"30": 1}, "pred_calls": 2, "generations": 10},
    "vendor/model-a#2": {"accepted": {"7": 1, "8": 1}, "pred_calls": 1},
    # model-b: one local-variant run with a bug, one that never finished, one finished empty
    "vendor/model-b#0": {"accepted": {"40": 1}, **LOCAL},
    "vendor/model-b#1": {"episodes": 20},
    "vendor/model-b#2": {},
}


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return top50_stub.run(tmp_path_factory.mktemp("r"), RUNS, n=3)


def rows(*run_dirs: Path) -> dict[str, ModelRuns]:
    report = build(list(run_dirs))
    assert report.top50 is not None
    return {r.model: r for r in report.top50}


def test_per_model_the_runs_bugs_as_the_scorer_counts_them(run_dir: Path) -> None:
    a = rows(run_dir)["vendor/model-a"]
    assert sorted(a.bugs) == [1, 2, 3]
    assert a.distribution == {1: 1, 2: 1, 3: 1}
    assert a.mean.value == 2.0 and a.mean.ci95 is not None
    low, high = a.mean.ci95
    assert 0 <= low < 2.0 < high <= 50
    assert [a.at(k) for k in (10, 25, 50)] == [1.0, 4 / 3, 2.0]  # positions 3, 7, 8 | 12 | 30, 40
    assert (a.first_attempt, a.second_attempt) == (5, 1)
    assert a.pred_calls == 50 * (4 + 2 + 1)
    assert a.pred_calls_per_bug == round(350 / 6, 4)
    assert a.cap_hits == {"model_generations": 50}  # run #1: every episode used its 10 generations
    assert a.labels == {"rankable": 3}


def test_beside_it_the_benchmark_s_best_run_and_its_inflation(run_dir: Path) -> None:
    a = rows(run_dir)["vendor/model-a"]
    best = a.best
    assert (best.n, best.best, best.mean) == (3, 3.0, 2.0)
    # E[max of 3 draws from {1, 2, 3}] = 1·(1/27) + 2·(8/27 - 1/27) + 3·(1 - 8/27)
    assert best.expected_best == pytest.approx((1 * 1 + 2 * 7 + 3 * 19) / 27)
    assert best.inflation == pytest.approx((1 * 1 + 2 * 7 + 3 * 19) / 27 - 2.0)


def test_an_unfinished_run_is_not_counted_and_a_local_one_is_labelled(run_dir: Path) -> None:
    b = rows(run_dir)["vendor/model-b"]
    assert (len(b.runs), b.left_out) == (2, 1)
    assert sorted(b.bugs) == [0, 1]
    assert b.labels == {f"local:{LOCAL['library_commit']}/0.5.0": 1, "rankable": 1}
    report = build([run_dir])
    assert any("local:8df8ac04/0.5.0 are local variants" in n for n in report.fairness.notes)


def test_the_json_text_and_html_reports_carry_it(
    run_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["report", str(run_dir), "--format", "json", "-o", str(tmp_path / "r.json")]) == 0
    top50 = {m["model"]: m for m in json.loads((tmp_path / "r.json").read_text())["top50"]}
    a = top50["vendor/model-a"]
    assert a["verified_bugs"]["per_run"] == [3, 1, 2] and a["verified_bugs"]["distribution"] == {
        "1": 1,
        "2": 1,
        "3": 1,
    }
    assert a["bugs_at"] == {"10": 1.0, "25": 4 / 3, "50": 2.0}
    assert a["best_of_n"]["best"] == 3.0 and a["best_of_n"]["inflation"] > 0
    assert [r["label"] for r in top50["vendor/model-b"]["run_rows"]] == [
        f"local:{LOCAL['library_commit']}/0.5.0",
        "rankable",
    ]
    capsys.readouterr()
    assert main(["report", str(run_dir)]) == 0
    text = capsys.readouterr().out
    line = next(x for x in text.splitlines() if x.startswith("vendor/model-a") and "rankable" in x)
    assert "1 2 3" in line and "5/1" in line and "gen 50" in line and "2.67" in line
    assert "2 +1" in next(x for x in text.splitlines() if x.startswith("vendor/model-b") and "local:" in x)
    assert main(["report", str(run_dir), "--format", "html", "-o", str(tmp_path / "r.html")]) == 0
    page = (tmp_path / "r.html").read_text()
    assert '<table id="top50">' in page and "local:8df8ac04/0.5.0" in page


def test_a_report_without_top50_runs_has_no_such_section(tmp_path: Path) -> None:
    from support.report import run_campaign

    report = build([run_campaign(tmp_path)])
    assert report.top50 is None and "top50" not in report.to_json()


def test_a_run_dir_pooled_with_its_copy_counts_each_run_once(run_dir: Path, tmp_path: Path) -> None:
    copy = Path(shutil.copytree(run_dir, tmp_path / "copy", symlinks=True))
    pooled = rows(run_dir, copy)["vendor/model-a"]
    assert sorted(pooled.bugs) == [1, 2, 3]


def test_runs_of_two_campaigns_pool(tmp_path: Path) -> None:
    (tmp_path / "one").mkdir()
    (tmp_path / "two").mkdir()
    runs = {"vendor/model-a#0": {"accepted": {"1": 1}}, "vendor/model-a#1": {"accepted": {"1": 1, "2": 2}}}
    first = top50_stub.run(tmp_path / "one", runs, n=1, name="one")
    second = top50_stub.run(tmp_path / "two", runs, n=2, name="two")
    a = rows(first, second)["vendor/model-a"]
    assert sorted(a.bugs) == [1, 1, 2] and a.best.best == 2.0 and a.second_attempt == 1


def test_an_accept_benchtui_s_verifier_rejects_is_an_audit_finding(tmp_path: Path) -> None:
    runs = {
        "vendor/model-a#0": {
            "accepted": {"3": 1, "12": 1},
            "recheck": {"rule_03": "accepted", "rule_12": "rejected"},
        }
    }
    run = top50_stub.run(tmp_path, runs, n=1)
    report = build([run])
    assert report.fairness.verdict.startswith("UNFAIR")
    assert any(
        "rule_12: rejected" in f and "not by benchtui's verifier" in f for f in report.fairness.findings
    )
    a = {r.model: r for r in report.top50 or []}["vendor/model-a"]
    assert a.bugs == [2]  # the benchmark's count stands; the disagreement is said beside it
    assert sum(r.rechecked for r in a.runs) == 2


def test_a_run_its_runner_did_not_certify_is_left_out_not_counted_as_nothing(tmp_path: Path) -> None:
    """The scorer's validation fails such a run and counts nothing of it: counting it as a run of
    0 bugs would pull the model's mean down, so it is left out and said."""
    runs = {
        "vendor/model-a#0": {"accepted": {"3": 1}},
        "vendor/model-a#1": {"accepted": {"4": 1, "5": 1}, "rankable": False},
    }
    a = rows(top50_stub.run(tmp_path, runs))["vendor/model-a"]
    assert (a.bugs, a.left_out) == ([1], 1)


def test_a_cut_run_s_wasted_attempt_is_said_not_counted(tmp_path: Path) -> None:
    runs = {"vendor/model-a#0": {"crash_attempts": [1], "accepted": {"5": 1}}}
    top50_stub.run(tmp_path, runs, n=1, finished=False)
    run = top50_stub.run(tmp_path, runs, n=1, resume=True)
    a = rows(run)["vendor/model-a"]
    assert (a.bugs, a.wasted_attempts, a.runs[0].attempt) == ([1], 1, 2)
