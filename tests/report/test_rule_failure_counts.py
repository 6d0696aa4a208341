"""A rule that panics on a valid instance counts like any bug, everywhere a verdict lands: the
session's outcome, the results files (our own format, which still follows the benchmark's early one: the certificate,
without a bundle, is the row's `instance_certificate`), the report's distinct rules, and
`benchtui verify` on those files. Judged by the real path (runners.kit.verdict.judge) against
the 8df8ac04 build's recorded answers (the live SteinerTree -> ILP panic)."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
from support import results_schema
from support.report import run_campaign
from support.transcripts import need_transcripts, public_certificate, replaying_pred

from benchtui.cli import main as cli
from benchtui.engine.results_format import ResultsFile

TASKS = ["steinertree_ilp", "knapsack_ilp"]


def judged_run(tmp_path: Path) -> tuple[Path, Path]:
    """model-a: the panic on its task (bug), a correct knapsack certificate (rejected); model-b:
    the panic named by pred's spelling and claimed as a refusal (bug), then the panic again on its
    knapsack task (off its task)."""
    folder = tmp_path / "certificates"
    folder.mkdir()
    panic = public_certificate("steinertree_ilp.panic.json")
    refusal = {
        **panic,
        "rule": "SteinerTree/SimpleGraph/i32 -> ILP/bool",
        "violation": "rejects_valid_instance",
    }
    for name, cert in {
        "panic.json": panic,
        "refusal.json": refusal,
        "knapsack.json": public_certificate("knapsack_ilp.correct.json"),
    }.items():
        (folder / name).write_text(json.dumps(cert))
    pred = replaying_pred(tmp_path / "bin", "8df8ac04")
    submits = {
        "fake/model-a#0": ["panic.json"],
        "fake/model-a#1": ["knapsack.json"],
        "fake/model-b#0": ["refusal.json"],
        "fake/model-b#1": ["panic.json"],
    }
    table = "\n".join(f'"{k}" = {json.dumps(v)}' for k, v in submits.items())
    extra = (
        f'[runners.judge]\nkind = "support.report:JudgingRunner"\npred = "{pred}"\n'
        f'certificates = "{folder}"\n[runners.judge.submits]\n{table}\n'
    )
    run_dir = run_campaign(tmp_path, n=2, cap="1", total="2", runner="judge", extra=extra, tasks=TASKS)
    return run_dir, pred


def test_a_panic_is_a_bug_in_the_results_the_report_and_verify(tmp_path, capsys):
    run_dir, pred = judged_run(tmp_path)
    benchmark_schema = json.loads(
        (need_transcripts().parent / "contracts" / "results.schema.json").read_text()
    )
    results = {}
    for path in (run_dir / "results").glob("*.json"):
        doc = json.loads(path.read_text())
        jsonschema.validate(doc, results_schema())
        jsonschema.validate(doc, benchmark_schema)  # the benchmark's early format still holds
        ResultsFile.model_validate(doc)
        results[doc["model"]] = doc
    assert {m: r["bugs_found"] for m, r in results.items()} == {"fake/model-a": 1, "fake/model-b": 1}
    (row,) = [r for r in results["fake/model-a"]["results"] if r["rule"] == "steinertree_ilp"]
    assert row["result"] == "bug_found" and "certificate" not in row
    assert row["instance_certificate"] == public_certificate("steinertree_ilp.panic.json")
    assert row["verify_details"]["found_by"] == "reduce"
    assert "panicked at src/rules/steinertree_ilp.rs:51:9" in row["reason"]

    assert cli.main(["report", str(run_dir), "--format", "json"]) == 0
    models = {m["model"]: m for m in json.loads(capsys.readouterr().out)["models"]}
    for name in ("fake/model-a", "fake/model-b"):
        assert models[name]["verified_bugs"] == 1 and models[name]["verified_rules"] == ["steinertree_ilp"]
    assert models["fake/model-a"]["certificates"]["confirmed"] == 1
    assert models["fake/model-a"]["certificates"]["rejected"] == 1
    assert models["fake/model-b"]["certificates"]["off_task"] == 1

    # `benchtui verify` finds the certificate in the results file and confirms it again
    results_file = run_dir / "results" / "fake_model-a.json"
    assert cli.main(["verify", str(results_file), "--pred", str(pred), "--json"]) == 0
    verdicts = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    panics = [v for v in verdicts if v.get("found_by") == "reduce"]
    assert panics and all(v["status"] == "accepted" for v in panics)
