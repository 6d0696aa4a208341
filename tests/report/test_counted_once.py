"""A session is counted once wherever its run dir lives: a run pooled with a `cp -a` copy of itself
(the copy's campaign name and history dates edited too) reports what the run alone reports, and
the report names the duplicates; two real runs of one campaign stay two runs."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

from test_pooling import campaign_file, run

from benchtui.cli import main as cli
from benchtui.report import build


def counts(report: dict) -> dict[str, tuple]:
    return {
        m["model"]: (m["planned"], m["ran"], m["bug_rate"]["hits"], m["bug_rate"]["trials"], m["spent_usd"])
        for m in report["models"]
    }


def disguised_copy(original: Path, to: Path) -> Path:
    """`cp -a`, then the copy's campaign renamed and every date in its identity moved a month."""
    shutil.copytree(original, to, symlinks=True)
    identity = to / "identity.json"
    text = re.sub(r"\d{4}-\d\d-\d\dT", "2031-01-01T", identity.read_text())
    identity.write_text(text.replace('"jan"', '"copy-of-jan"'))
    frozen = to / "campaign.toml"
    frozen.write_text(frozen.read_text().replace('name = "jan"', 'name = "copy-of-jan"'))
    return to


def test_a_run_pooled_with_its_copy_counts_each_session_once_and_names_the_duplicates(tmp_path, capsys):
    original = run(campaign_file(tmp_path / "m1", "jan", ["vendor/a", "vendor/b"], total="1"))
    copy = disguised_copy(original, tmp_path / "elsewhere" / "feb")
    assert cli.main(["report", str(original), "--format", "json"]) == 0
    alone = json.loads(capsys.readouterr().out)
    assert cli.main(["report", str(original), str(copy), "--format", "json"]) == 0
    pooled = json.loads(capsys.readouterr().out)
    assert counts(alone)["vendor/a"] == (4, 4, 2, 4, 0.04)
    assert counts(pooled) == counts(alone)
    assert [c["pairs"] for c in pooled["comparisons"]] == [c["pairs"] for c in alone["comparisons"]]
    (note,) = [n for n in pooled["fairness"]["notes"] if "already pooled" in n]
    assert note.startswith(f"{copy}: 8 session(s) already pooled from another run dir (8 of {original}")
    assert "each counted once" in note


def test_two_runs_of_one_campaign_are_two_runs(tmp_path):
    """The same campaign run again (its own sessions, started at other times) is more evidence."""
    first = run(campaign_file(tmp_path / "m1", "jan", ["vendor/a"]))
    again = run(campaign_file(tmp_path / "m2", "jan", ["vendor/a"]))
    (row,) = build([first, again]).models
    assert (row.planned, row.bug_rate.trials, float(row.spent_usd)) == (8, 8, 0.08)
    assert not [n for n in build([first, again]).fairness.notes if "already pooled" in n]
