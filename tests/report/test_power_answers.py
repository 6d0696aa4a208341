"""Power before and after, as a user reads it: `benchtui check` says, for the campaign as planned,
what it can separate and how many repeats a difference needs (from its own run dir, earlier runs,
or a stated prior where there is no data); the report says it of the board; growing the campaign
to the number the check gave is a `--resume` like any other growth."""

from __future__ import annotations

import json
import re

import pytest
from test_pooling import campaign_file, run

from benchtui.cli import main as cli
from benchtui.report import build

SIX = 'tasks = ["r1", "r2", "r3", "r4", "r5", "r6"]\nrepeats = 2'
BUGS = (
    '[runners.fake]\nkind = "fake"\ncost_usd = 0.01\n'
    'bug_sessions = { "vendor/a" = [0, 1, 2, 6, 7, 9], "vendor/b" = [0, 7, 3] }\n'
)


def check(capsys, path, *argv) -> str:
    assert cli.main(["check", str(path), "--state-dir", str(path.parent / "runs"), *argv]) == 0
    return capsys.readouterr().out


def power_line(text: str) -> str:
    (line,) = [x for x in text.splitlines() if x.startswith("power (80%")]
    return line


def test_before_any_data_check_answers_from_the_stated_prior(tmp_path, capsys):
    (tmp_path / "target").mkdir()
    path = campaign_file(tmp_path / "c", "fair", ["vendor/a", "vendor/b"], sessions=SIX, runner=BUGS)
    out = check(capsys, path, "--difference", "50")
    line = power_line(out)
    assert "clustered by task, 6 tasks × 2 sessions" in line
    assert re.search(r"this campaign as planned separates differences of at least \d+ points", line)
    assert "from prior (no data): bug rate 30% per session for both models, task ICC 0.3" in out
    # The prior's 50 points need more than the 2 repeats planned: the way there is named.
    needed = int(re.search(r"; (\d+) repeats per task separate 50 points", line).group(1))
    assert needed > 2 and f"to grow there: repeats = {needed} in the campaign" in out


def test_with_the_campaigns_own_run_check_answers_from_its_data_and_growing_there_resumes(tmp_path, capsys):
    path = campaign_file(
        tmp_path / "c", "fair", ["vendor/a", "vendor/b"], sessions=SIX, runner=BUGS, total="2"
    )
    run_dir = run(path)
    out = check(capsys, path, "--difference", "50")
    assert "from data: 24 sessions on 6 tasks" in out
    line = power_line(out)
    needed = int(re.search(r"; (\d+) repeats per task separate 50 points", line).group(1))
    assert needed > 2
    # Follow the advice: the campaign grows to that many repeats on --resume, and the board then
    # resolves a smaller difference than before.
    before = build([run_dir]).power
    path.write_text(path.read_text().replace("repeats = 2", f"repeats = {needed}"))
    assert cli.main([str(path), "--no-ui", "--resume", "--state-dir", str(path.parent / "runs")]) == 0
    capsys.readouterr()
    after = build([run_dir]).power
    assert before is not None and after is not None
    assert after.plan.repeats == needed and after.detectable < before.detectable


def test_the_report_says_what_the_board_separates_in_text_and_json(tmp_path, capsys):
    run_dir = run(campaign_file(tmp_path / "c", "fair", ["vendor/a", "vendor/b"], sessions=SIX, runner=BUGS))
    assert cli.main(["report", str(run_dir), "--format", "json"]) == 0
    report = json.loads(capsys.readouterr().out)
    power = report["power"]
    assert power["difference"] == 0.1 and power["unit"] == "task" and power["clusters"] == 6
    assert 0 < power["detectable"] <= 1 and power["source"] == "data: 24 sessions on 6 tasks"
    (pair,) = report["comparisons"]
    assert pair["difference_clustered"]["unit"] == "task" and pair["difference_clustered"]["clusters"] == 6
    low, high = pair["difference_clustered"]["ci95"]
    assert low <= pair["difference_clustered"]["value"] <= high
    a = next(m for m in report["models"] if m["model"] == "vendor/a")
    assert (a["bug_rate"]["unit"], a["bug_rate"]["clusters"], a["bug_rate"]["method"]) == (
        "task",
        6,
        "korn_graubard",
    )
    # Sessions of a task are alike here: the clustered interval is wider than the one over sessions.
    assert (
        a["bug_rate"]["ci95"][1] - a["bug_rate"]["ci95"][0]
        > a["bug_rate"]["ci95_unclustered"][1] - a["bug_rate"]["ci95_unclustered"][0]
    )
    assert a["best_of_n"]["runs"] == 2 and a["best_of_n"]["best"] >= a["best_of_n"]["mean"]
    assert cli.main(["report", str(run_dir)]) == 0
    text = capsys.readouterr().out
    assert f"separates differences of at least {power['detectable'] * 100:.0f} points" in text
    assert "intervals: clustered by task" in text and "tasks: vendor/a 6, vendor/b 6" in text
    assert "Best run per model (the benchmark's rule)" in text


@pytest.mark.parametrize("points", ["0", "-5", "101", "nan", "ten"])
def test_a_difference_that_is_not_points_is_refused_in_one_line(tmp_path, capsys, points):
    path = campaign_file(tmp_path / "c", "fair", ["vendor/a"], sessions=SIX, runner=BUGS)
    assert cli.main(["check", str(path), "--difference", points]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "--difference" in err


def test_the_html_report_says_it_too(tmp_path, capsys):
    run_dir = run(campaign_file(tmp_path / "c", "fair", ["vendor/a", "vendor/b"], sessions=SIX, runner=BUGS))
    assert cli.main(["report", str(run_dir), "--format", "html"]) == 0
    page = capsys.readouterr().out
    assert '<p class="note" id="clustering">intervals: clustered by task' in page
    assert 'id="power">power (80%, two-sided 95%, clustered by task, 6 tasks × 2 sessions)' in page
    assert re.search(r'<ul id="best-of-n"><li>vendor/[ab]: mean [0-9.]+ over 2 run\(s\); best', page)
    assert "(95%, paired by task, 6 tasks)" in page
