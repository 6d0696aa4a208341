"""The public board of a top50 campaign carries its Top50 rows (aggregates: the mean a run beside
the best run the benchmark's board keeps), and the guard passes it: no rule, no certificate."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support import top50_stub

from benchtui.cli.main import main

RUNS = {
    "vendor/model-a#0": {"accepted": {"3": 1, "12": 2}},
    "vendor/model-a#1": {"accepted": {"40": 1}},
    "vendor/model-b#0": {"accepted": {"7": 1}, "library_commit": "not-a-commit", "pred_version": "0.5.0"},
}


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return top50_stub.run(tmp_path_factory.mktemp("p"), RUNS)


def test_the_public_board_has_the_mean_beside_the_best(run_dir: Path, tmp_path: Path) -> None:
    assert main(["report", str(run_dir), "--public", "-o", str(tmp_path / "b.json")]) == 0
    rows = {r["model"]: r for r in json.loads((tmp_path / "b.json").read_text())["top50"]}
    a = rows["vendor/model-a"]
    assert (a["runs"], a["per_run"], a["mean"], a["best"]) == (2, [2, 1], 1.5, 2.0)
    assert a["expected_best"] == pytest.approx(1.75) and a["inflation"] == pytest.approx(0.25)
    assert a["bugs_at"] == {"bugs@10": 0.5, "bugs@25": 1.0, "bugs@50": 1.5}
    # what a submission says is outside data: a commit that is no hex is not published as it is
    assert rows["vendor/model-b"]["labels"] == {"local:0000000/unrecorded": 1, "rankable": 1}
    assert "rule_03" not in (tmp_path / "b.json").read_text()
    assert main(["report", str(run_dir), "--check-public", str(tmp_path / "b.json")]) == 0


def test_the_public_page_shows_them_and_passes_the_guard(run_dir: Path, tmp_path: Path) -> None:
    assert main(["report", str(run_dir), "--public", "-o", str(tmp_path / "b.html")]) == 0
    page = (tmp_path / "b.html").read_text()
    assert '<table id="top50-table">' in page and "1.75" in page
    assert main(["report", str(run_dir), "--check-public", str(tmp_path / "b.html")]) == 0


def test_a_board_without_top50_runs_has_none(tmp_path: Path) -> None:
    from support.report import run_campaign

    run = run_campaign(tmp_path)
    assert main(["report", str(run), "--public", "-o", str(tmp_path / "b.json")]) == 0
    assert json.loads((tmp_path / "b.json").read_text())["top50"] is None
