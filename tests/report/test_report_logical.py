"""Logical budgets in the report: per model the limits, the counters used (mean, max, how many
sessions each limit stopped), and sessions ended by a counter vs by submitting, matching the
journal; reports of money-only runs carry none of it."""

from __future__ import annotations

import json
from collections import Counter

from support import last_states
from support.report import LOGICAL, run_campaign

from benchtui.cli import main as cli

COUNTERS = """
[runners.counting]
kind = "support.report:CounterRunner"
submit = ["fake/model-b"]
[runners.counting.tries]
"fake/model-a" = { model_calls = 5, "tools.pred" = 2 }
"fake/model-b" = { model_calls = 1, "tools.pred solve" = 1 }
"fake/model-b#0" = { model_calls = 2, "tools.pred solve" = 3 }
"""
LIMITS = {
    "model_calls": 3,
    "shell_actions": 5,
    "tools.pred": 4,
    "tools.pred solve": 2,
    "submits": 2,
    "observation_chars": 10000,
}


def report(capsys, run_dir, fmt: str = "json"):
    assert cli.main(["report", str(run_dir), "--format", fmt]) == 0
    out = capsys.readouterr().out
    return json.loads(out) if fmt == "json" else out


def counting_run(tmp_path):
    return run_campaign(tmp_path, n=4, cap="1", total="2", runner="counting", extra=COUNTERS + LOGICAL)


def test_the_report_shows_limits_counters_used_and_how_sessions_ended(tmp_path, capsys):
    run_dir = counting_run(tmp_path)
    by_model = {m["model"]: m["logical"] for m in report(capsys, run_dir)["models"]}
    a, b = by_model["fake/model-a"], by_model["fake/model-b"]
    assert a["limits"] == b["limits"] == LIMITS
    # model-a asks for 5 calls: every session is stopped at exactly 3.
    assert a["used"]["model_calls"] == {"mean": 3.0, "max": 3}
    assert a["used"]["tools.pred"] == {"mean": 2.0, "max": 2}
    assert a["used"]["shell_actions"] == {"mean": 0.0, "max": 0}
    assert a["hit"] == {c: 4 if c == "model_calls" else 0 for c in LIMITS if c != "observation_chars"}
    assert (a["sessions"], a["ended_by_counter"], a["ended_by_submit"]) == (4, 4, 0)
    # model-b's session 0 runs out of `pred solve`; the other three submit within their limits.
    assert b["used"]["model_calls"] == {"mean": 1.25, "max": 2}
    assert b["used"]["tools.pred solve"] == {"mean": 1.25, "max": 2}
    assert b["hit"]["tools.pred solve"] == 1 and b["hit"]["model_calls"] == 0
    assert (b["sessions"], b["ended_by_counter"], b["ended_by_submit"]) == (4, 1, 3)
    # The same numbers as the journal's end lines.
    ends = [r for r in last_states(run_dir).values() if r["model"] == "fake/model-b"]
    assert Counter(c for r in ends for c in r.get("exhausted", [])) == {"tools.pred solve": 1}
    assert max(r["counters"]["tools"]["pred solve"] for r in ends) == 2

    text = report(capsys, run_dir, "text")
    assert (
        "Logical budgets per session: calls 3, actions 5, pred 4, pred solve 2, submits 2, "
        "observation_chars 10,000" in text
    )
    row = next(line for line in text.splitlines() if line.strip().startswith("fake/model-a  4"))
    assert row.split()[:7] == ["fake/model-a", "4", "4", "0", "3,", "max", "3,"]
    html = report(capsys, run_dir, "html")
    assert '<table id="logical">' in html and "<td>1.2, max 2, 1 hit</td>" in html


def test_fake_sessions_use_one_model_call_and_end_by_submitting_when_they_find_a_bug(tmp_path, capsys):
    run_dir = run_campaign(tmp_path, n=3, cap="1", total="2", bugs={"fake/model-a": [0, 2]}, extra=LOGICAL)
    by_model = {m["model"]: m["logical"] for m in report(capsys, run_dir)["models"]}
    a, b = by_model["fake/model-a"], by_model["fake/model-b"]
    assert a["used"]["model_calls"] == b["used"]["model_calls"] == {"mean": 1.0, "max": 1}
    assert (a["ended_by_counter"], a["ended_by_submit"]) == (0, 2)
    assert (b["ended_by_counter"], b["ended_by_submit"]) == (0, 0)


def test_reports_of_money_only_runs_have_no_logical_budgets(tmp_path, capsys):
    run_dir = run_campaign(tmp_path, n=2, cap="1", total="2")
    assert all("logical" not in m for m in report(capsys, run_dir)["models"])
    assert "Logical budgets" not in report(capsys, run_dir, "text")
    assert 'id="logical"' not in report(capsys, run_dir, "html")
