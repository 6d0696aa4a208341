"""An older pred (0.3.0: no `list --rules`, no `extract`) judges certificates on their merits.

`support.stand_in_pred`'s old-CLI mode answers `--version`, `--help`, `list`, `list --rules`,
`export-graph` and `extract` exactly as `../shared/pred-transcripts/pred-0.3.0/` recorded them,
and `reduce`/`solve`/`evaluate`/`create` as a later build's transcript does. Read where they are
at test time; skipped, with a reason, where they are absent (a fresh clone).
"""

from __future__ import annotations

import json
import subprocess

import pytest
from support.transcripts import (
    NOT_RECORDED,
    expected_cases,
    need_old_cli,
    old_cli_pred,
    public_certificate,
    replaying_pred,
)

from benchtui.core.target import TargetTools
from benchtui.targets.problem_reductions import verify
from benchtui.targets.problem_reductions.kind import ProblemReductions, ProblemReductionsProfile
from benchtui.targets.problem_reductions.tasks import rule_list

CASES = [case for case in expected_cases() if case[1] in ("8df8ac04", "v0.5.0")]
NO_CASES = pytest.mark.skip(reason="the real pred's transcripts are not here: a fresh clone has none")


@pytest.fixture
def misses(tmp_path, monkeypatch):
    log = tmp_path / "misses.jsonl"
    monkeypatch.setenv("STAND_IN_PRED_MISSES", str(log))
    return log


def _run(pred, *args, cwd):
    return subprocess.run([str(pred), *args], cwd=cwd, capture_output=True, text=True)


# -- the stand-in answers as 0.3.0 did ------------------------------------------------------------
def test_the_stand_in_answers_as_the_recorded_0_3_0(tmp_path):
    folder = need_old_cli()
    pred = old_cli_pred(tmp_path / "bin", "v0.5.0")
    assert _run(pred, "--version", cwd=tmp_path).stdout == (folder / "version.txt").read_text()
    refused = _run(pred, "list", "--rules", "--json", cwd=tmp_path)
    assert refused.returncode == 2 and "unexpected argument '--rules' found" in refused.stderr
    listed = _run(pred, "list", "--json", cwd=tmp_path)
    assert listed.returncode == 0 and json.loads(listed.stdout)["num_reductions"] == 58
    exported = _run(pred, "export-graph", "-o", "g.json", cwd=tmp_path)
    assert exported.returncode == 0 and exported.stderr == "Wrote g.json\n"
    assert (tmp_path / "g.json").read_bytes() == (folder / "graph.json").read_bytes()
    extract = _run(pred, "extract", "b.json", "--config", "0,1", "--json", cwd=tmp_path)
    assert extract.returncode == 2 and "unrecognized subcommand 'extract'" in extract.stderr
    assert "extract" not in _run(pred, "--help", cwd=tmp_path).stdout


def test_what_0_3_0_never_answered_is_a_miss(tmp_path):
    """`export-graph` to stdout was never recorded: a miss, not a guess at its shape."""
    done = _run(old_cli_pred(tmp_path / "bin", "v0.5.0"), "export-graph", "--json", cwd=tmp_path)
    assert done.returncode == NOT_RECORDED and done.stdout == ""


# -- the rule inventory: export-graph's edges where `list --rules` is absent ----------------------
def test_the_rule_inventory_of_0_3_0_is_its_reduction_graph(tmp_path):
    rules, problem = rule_list(str(old_cli_pred(tmp_path / "bin", "v0.5.0")))
    assert problem == ""
    graph = json.loads((need_old_cli() / "graph.json").read_text())
    assert len(rules) == len(graph["edges"]) == 58
    # Named as `list --rules` names them: TYPE/value/value, the variant's values in pred's order.
    assert ("MaximumIndependentSet/SimpleGraph/i32", "MinimumVertexCover/SimpleGraph/i32") in rules
    assert ("Satisfiability", "MaximumIndependentSet/SimpleGraph/One") in rules


def test_a_later_pred_still_lists_its_rules_without_export_graph(tmp_path, misses):
    rules, problem = rule_list(str(replaying_pred(tmp_path / "bin", "8df8ac04")))
    assert problem == "" and len(rules) == 260
    assert not misses.exists()  # export-graph was never asked (it was never recorded either)


# -- every certificate judged on its merits ------------------------------------------------------
@pytest.mark.parametrize(("name", "build"), CASES or [pytest.param("-", "-", marks=NO_CASES)])
def test_no_certificate_is_inconclusive_for_a_missing_option(name, build, tmp_path, misses):
    """With 0.3.0's CLI over a later build's answers, every verdict is the later build's own
    without `extract`, or (a panic certificate) the one 0.3.0's own inventory gives."""
    cert = public_certificate(name)
    verdict = verify(cert, pred=str(old_cli_pred(tmp_path / "old", build)))
    assert not misses.exists(), misses.read_text()
    assert "--rules" not in verdict.reason and "unrecognized" not in verdict.reason, verdict
    if cert["violation"] == "panics_on_valid_instance":
        # 0.3.0 has no SteinerTree: a rule this pred lacks, judged from its reduction graph.
        assert verdict.status == "rejected" and verdict.details["cause"] == "unknown_rule", verdict
        assert "among its 58 rules" in verdict.reason
        return
    without_extract = verify(cert, pred=str(replaying_pred(tmp_path / "new", "v0.5.0")))
    if build == "v0.5.0":
        assert verdict == without_extract
    else:
        assert verdict.status in ("accepted", "rejected") or "reduce failed" in verdict.reason, verdict


def test_a_rejection_says_which_route_this_pred_lacks(tmp_path, misses):
    cert = public_certificate("knapsack_ilp.correct.json")
    assert "target_config" in cert
    verdict = verify(cert, pred=str(old_cli_pred(tmp_path / "old", "8df8ac04")))
    assert verdict.status == "rejected" and verdict.details["missing_routes"] == ["extract"]
    assert "this pred has no `pred extract`" in verdict.reason
    # The build with extract says no such thing: the route was run.
    full = verify(cert, pred=str(replaying_pred(tmp_path / "new", "8df8ac04")))
    assert full.status == "rejected" and "no `pred extract`" not in full.reason
    assert "missing_routes" not in full.details
    assert not misses.exists()


def test_a_panic_certificate_finds_its_rule_in_0_3_0s_graph(tmp_path, misses):
    """A rule 0.3.0 has (MIS -> MVC): the inventory comes from export-graph, and the panic checks
    go on to pred's answers on the instance (doctored: the source solves, reduce panics in the
    rule's own file), to a confirmation."""
    source = {
        "type": "MaximumIndependentSet",
        "variant": {"graph": "SimpleGraph", "weight": "i32"},
        "data": {"graph": {"num_vertices": 2, "edges": [[0, 1]]}, "weights": [1, 1]},
    }
    solved = {
        "evaluation": "Max(1)",
        "problem": "MaximumIndependentSet",
        "solution": [1, 0],
        "solver": "brute-force",
    }
    panic = (
        "\nthread 'main' (4821) panicked at src/rules/minimumvertexcover_maximumindependentset.rs:40:9:\n"
        "index out of bounds: the len is 2 but the index is 2\n"
    )
    pred = old_cli_pred(tmp_path / "old", "8df8ac04")
    answers = tmp_path / "answers.json"
    answers.write_text(
        json.dumps({"solve": {"stdout": json.dumps(solved)}, "reduce": {"stderr": panic, "exit": 101}})
    )
    script = pred.read_text().replace(
        "STAND_IN_PRED_OLD_CLI=", f"STAND_IN_PRED_ANSWERS='{answers}' STAND_IN_PRED_OLD_CLI="
    )
    pred.write_text(script)
    cert = {
        "rule": "maximumindependentset_minimumvertexcover",
        "violation": "panics_on_valid_instance",
        "source": source,
    }
    verdict = verify(cert, pred=str(pred))
    assert verdict.accepted, verdict
    assert "minimumvertexcover_maximumindependentset.rs:40:9" in verdict.reason
    assert not misses.exists(), misses.read_text()


def test_benchtui_check_with_0_3_0_judges_every_task_it_has(tmp_path):
    import tomllib

    from support import ROOT

    tasks = tomllib.loads((ROOT / "campaigns" / "problem-reductions.toml").read_text())["tasks"]
    tools = TargetTools({"pred": str(old_cli_pred(tmp_path / "b", "8df8ac04"))}, 60.0)
    checks = ProblemReductions(ProblemReductionsProfile()).preflight(tools, tasks=tasks, full=True)
    assert checks[0].detail.startswith("pred 0.3.0 ")
    rows = checks[1:]
    assert [r.what for r in rows] == [f"task {t}" for t in tasks]
    assert not any("--rules" in (r.problem or "") for r in rows), rows
    judged = [r for r in rows if not r.problem]
    absent = [r for r in rows if r.problem == "no such rule among this pred's 58 rules"]
    assert judged and all("canonical example rejected" in r.detail for r in judged), rows
    assert len(judged) + len(absent) == len(rows), rows
