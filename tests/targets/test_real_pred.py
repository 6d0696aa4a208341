"""The verifier against the REAL pred (problem-reductions 0.5.0): its rules are correct on these
instances, so every certificate must be rejected, with a definitive verdict, never confirmed,
never inconclusive (but one: the SteinerTree panic, confirmed exactly where this pred has it).

Skips where no real pred exists (a clone without ../shared and no `pred` on PATH); fails in CI.
"""

from __future__ import annotations

import json
import os
import subprocess
import tomllib
from pathlib import Path

import pytest
from support import certificates
from support.real_parts import ROOT, require_pred

from benchtui.engine.campaign import shipped
from benchtui.targets.problem_reductions import verify
from benchtui.targets.problem_reductions.tasks import (
    TASK_RULES,
    canonical_certificate,
    rule_list,
    rule_of,
    run_pred,
)

CAMPAIGN = tomllib.loads((ROOT / "campaigns" / "problem-reductions.toml").read_text())
TIMEOUT = shipped.resolve("mini", CAMPAIGN["runners"]["mini"], ROOT / "campaigns")["verify_timeout_s"]


@pytest.fixture(scope="module")
def pred() -> str:
    return str(require_pred())


def build(pred: str, tmp_path: Path, create: list[str], target: str, **extra) -> dict:
    """A certificate built the way an agent builds one, with the real pred."""
    source = run_pred(pred, ["create", *create, "--json"], timeout=30)
    assert not source.error, source.error
    (tmp_path / "source.json").write_text(source.stdout)
    bundle = run_pred(
        pred, ["reduce", "source.json", "--to", target, "--json"], timeout=30, cwd=str(tmp_path)
    )
    assert not bundle.error, bundle.error
    return {
        "rule": "hand-made",
        "violation": "unsound_extraction",
        "source": json.loads(source.stdout),
        "bundle": json.loads(bundle.stdout),
        **extra,
    }


def rejected(verdict) -> None:
    assert verdict.status == "rejected" and verdict.details["cause"] == "no_violation", verdict


def test_every_task_of_the_shipped_campaign_is_a_rule_of_pred(pred):
    rules, problem = rule_list(pred)
    assert not problem and len(rules) == 260
    missing = [task for task in CAMPAIGN["tasks"] if rule_of(task, rules) is None]
    assert not missing, f"tasks that are no rule of pred list --rules: {missing}"
    assert set(CAMPAIGN["tasks"]) <= set(TASK_RULES)


@pytest.mark.parametrize("task", CAMPAIGN["tasks"])
def test_the_canonical_example_of_every_task_is_rejected_within_its_timeout(pred, task):
    cert, problem = canonical_certificate(TASK_RULES[task], pred, timeout=TIMEOUT)
    assert cert is not None, problem
    rejected(verify(cert, pred=pred, timeout=TIMEOUT))


def test_the_contract_certificates_are_rejected(pred):
    wrong = verify(certificates.wrong_target(), pred=pred)
    assert wrong.status == "rejected" and wrong.details["cause"] == "wrong_target", wrong
    rejected(verify(certificates.example(), pred=pred))


def test_a_weighted_rule_gets_a_definitive_verdict(pred, tmp_path):
    # pred reduce --to MaximumIndependentSet (no variant) finds no path from i32 weights.
    cert = build(
        pred,
        tmp_path,
        ["MinimumVertexCover/SimpleGraph/i32", "--graph", "0-1,1-2,2-3,0-3", "--weights", "3,1,4,1"],
        "MaximumIndependentSet/SimpleGraph/i32",
        violation="suboptimal_extraction",
        target_config="1,0,1,0",
    )
    rejected(verify(cert, pred=pred))


def test_a_multi_step_bundle_is_reduced_along_its_own_path(pred, tmp_path):
    cert = build(pred, tmp_path, ["MIS", "--graph", "0-1,1-2"], "QUBO")
    assert len(cert["bundle"]["path"]) > 2
    rejected(verify(cert, pred=pred))


@pytest.mark.parametrize(
    "create, target",
    [
        (["HC", "--graph", "0-1,1-2,2-3"], "TravelingSalesman/SimpleGraph/i32"),  # Or(false) both sides
        (["SAT", "--num-vars", "1", "--clauses", "1;-1"], "KSatisfiability/K3"),  # bundle solve exits 1
        (["Factoring", "--target", "5", "--m", "1", "--n", "2"], "CircuitSAT"),  # no factors: no circuit
    ],
)
def test_no_instances_of_correct_rules_are_rejected(pred, tmp_path, create, target):
    rejected(verify(build(pred, tmp_path, create, target), pred=pred))


def test_a_target_config_pred_refuses_is_rejected_not_inconclusive(pred, tmp_path):
    cert = build(pred, tmp_path, ["MIS", "--graph", "0-1,1-2"], "MaximumClique", target_config="1,0")
    verdict = verify(cert, pred=pred)
    rejected(verdict)
    assert verdict.details["extract_error"].startswith("Error: Target config has 2 values")


def test_pred_errors_reach_the_reason_without_backtraces(pred, monkeypatch):
    monkeypatch.setenv("RUST_BACKTRACE", "1")
    cert = certificates.example()
    cert["source"]["data"] = {"nonsense": True}
    verdict = verify(cert, pred=pred)
    assert verdict.status == "inconclusive" and verdict.details["cause"] == "pred_error", verdict
    assert verdict.reason.startswith("pred reduce failed: Error:")
    assert "backtrace" not in verdict.reason.lower() and "\n" not in verdict.reason


@pytest.mark.parametrize("task", CAMPAIGN["tasks"])
def test_a_panic_claim_on_every_tasks_canonical_example_is_rejected(pred, task):
    cert, problem = canonical_certificate(TASK_RULES[task], pred, timeout=TIMEOUT)
    assert cert is not None, problem
    claim = {"rule": task, "violation": "panics_on_valid_instance", "source": cert["source"]}
    rejected(verify(claim, pred=pred, timeout=TIMEOUT))


def test_a_panic_claim_is_confirmed_exactly_where_this_pred_panics_in_the_rules_file(pred, tmp_path):
    """The public SteinerTree instance (a zero-weight edge): 8df8ac04's SteinerTree -> ILP panics on
    it; a build with the rule fixed reduces it. The verdict follows what this pred does."""
    from support.transcripts import public_certificate

    cert = public_certificate("steinertree_ilp.panic.json")
    (tmp_path / "source.json").write_text(json.dumps(cert["source"]))
    direct = subprocess.run(
        [pred, "reduce", "source.json", "--to", "ILP/bool", "--json"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        env={**os.environ, "RUST_BACKTRACE": "0"},
    )
    verdict = verify(cert, pred=pred, timeout=TIMEOUT)
    if direct.returncode == 101 and "panicked at src/rules/steinertree_ilp.rs:" in direct.stderr:
        assert verdict.accepted and verdict.details["cause"] == "panics_in_rule", verdict
    else:
        assert direct.returncode == 0, direct.stderr
        rejected(verdict)
