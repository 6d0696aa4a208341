"""A rule that panics on, or rejects, a valid instance (`panics_on_valid_instance`,
`rejects_valid_instance`: a rule and a source, no bundle), against the real pred's answers.

`../shared/pred-transcripts/` (8df8ac04) recorded the live SteinerTree -> ILP panic: a valid
instance (a zero-weight edge; brute force solves it, Min(1)) makes `pred reduce --to ILP/bool`
panic at src/rules/steinertree_ilp.rs:51:9. Doctored preds (the replay, one subcommand answered
otherwise) stand for what no build recorded: a crash elsewhere, a kill, an instance pred refuses.
"""

from __future__ import annotations

import json
import signal
from pathlib import Path
from typing import Any

import pytest
import trio
from support.transcripts import doctored_pred, expected_cases, public_certificate, replaying_pred

from benchtui.targets.problem_reductions import verify, verify_async

PANIC_CERT = "steinertree_ilp.panic.json"
NO_TRANSCRIPTS = pytest.mark.skip(reason="the real pred's transcripts are not here: a fresh clone has none")
NOTE = "note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace\n"


def panic_at(location: str, message: str = "index out of bounds: the len is 3 but the index is 3") -> str:
    """stderr of a Rust panic as the real pred prints it (thread id and all)."""
    return f"\nthread 'main' (48213) panicked at {location}:\n{message}\n{NOTE}"


def panicking(**changes: Any) -> dict[str, Any]:
    return {**public_certificate(PANIC_CERT), **changes}


def as_rule_failure(name: str, violation: str = "panics_on_valid_instance") -> dict[str, Any]:
    """A public round-trip certificate turned into a rule-failure claim (rule and source only)."""
    cert = public_certificate(name)
    return {"rule": cert["rule"], "source": cert["source"], "violation": violation}


@pytest.fixture
def misses(tmp_path, monkeypatch) -> Path:
    log = tmp_path / "misses.jsonl"
    monkeypatch.setenv("STAND_IN_PRED_MISSES", str(log))
    return log


def real(tmp_path: Path, build: str = "8df8ac04") -> str:
    return str(replaying_pred(tmp_path / "bin", build))


def doctored(tmp_path: Path, **answers: dict[str, Any]) -> str:
    return str(doctored_pred(tmp_path / "doctored", "8df8ac04", answers))


# -- confirmed: the real panic ------------------------------------------------------------------
@pytest.mark.parametrize(
    "rule",
    ["steinertree_ilp", "SteinerTree -> ILP", "SteinerTree/SimpleGraph/i32 -> ILP/bool", "SteinerTreeToILP"],
)
def test_the_live_steinertree_panic_is_confirmed_with_its_panic_line_and_evidence(tmp_path, misses, rule):
    verdict = verify(panicking(rule=rule), pred=real(tmp_path))
    assert not misses.exists(), misses.read_text()
    assert verdict.accepted, verdict
    assert "panicked at src/rules/steinertree_ilp.rs:51:9" in verdict.reason
    assert "requires strictly positive edge weights" in verdict.reason
    assert verdict.reason.endswith("(found by reduce)")
    d = verdict.details
    assert (d["cause"], d["found_by"], d["observed"]) == (
        "panics_in_rule",
        "reduce",
        "panics_on_valid_instance",
    )
    assert d["pred_rule"] == "SteinerTree/SimpleGraph/i32 -> ILP/bool"
    assert d["evidence"]["exit"] == 101 and d["evidence"]["panic"] == "src/rules/steinertree_ilp.rs:51:9"
    assert d["evidence"]["source_solve"] == {
        "solver": "brute-force",
        "evaluation": "Min(1)",
        "solution": [1, 1, 0],
    }


def test_a_rule_that_refuses_by_its_own_assertion_is_the_same_evidence(tmp_path, misses):
    verdict = verify(panicking(violation="rejects_valid_instance"), pred=real(tmp_path))
    assert verdict.accepted and verdict.details["observed"] == "rejects_valid_instance"
    assert verdict.reason.startswith("rejects_valid_instance: pred reduce --to ILP/bool panicked at")


def test_the_trio_driver_gives_the_same_verdict(tmp_path, misses):
    pred = real(tmp_path)
    assert trio.run(lambda: verify_async(panicking(), pred=pred)) == verify(panicking(), pred=pred)


# -- not confirmed: real answers ----------------------------------------------------------------
def test_a_correct_rule_that_reduces_the_instance_is_rejected(tmp_path, misses):
    """Knapsack -> ILP: brute force Max(10), `pred reduce` exit 0."""
    for build in ("8df8ac04", "v0.5.0"):
        verdict = verify(as_rule_failure("knapsack_ilp.correct.json"), pred=real(tmp_path / build, build))
        assert verdict.status == "rejected" and verdict.details["cause"] == "no_violation", verdict
        assert "reduces the instance (exit 0)" in verdict.reason
        assert verdict.details["evidence"]["source_solve"]["evaluation"] == "Max(10)"
    assert not misses.exists(), misses.read_text()


def test_a_rule_pred_no_longer_has_is_rejected(tmp_path, misses):
    """ThreePartition -> FlowShopScheduling was removed before 8df8ac04: no rule, no path."""
    cert = as_rule_failure("threepartition_flowshopscheduling.bug.json", "rejects_valid_instance")
    verdict = verify(cert, pred=real(tmp_path))
    assert verdict.status == "rejected" and verdict.details["cause"] == "unknown_rule", verdict
    assert "pred has no rule 'threepartition_flowshopscheduling'" in verdict.reason
    assert not misses.exists()


def test_the_instance_must_be_of_the_rules_declared_source(tmp_path, misses):
    """steinertreeingraphs_ilp is a real rule, of another source problem."""
    verdict = verify(panicking(rule="steinertreeingraphs_ilp"), pred=real(tmp_path))
    assert verdict.status == "rejected" and verdict.details["cause"] == "wrong_source", verdict
    assert "SteinerTreeInGraphs/SimpleGraph/i32" in verdict.reason
    cert = panicking()
    cert["source"] = {**cert["source"], "variant": {"graph": "SimpleGraph", "weight": "One"}}
    verdict = verify(cert, pred=real(tmp_path))
    assert verdict.status == "rejected" and verdict.details["cause"] == "wrong_source", verdict
    assert not misses.exists()


def test_a_certificate_without_a_rule_or_a_source_is_malformed(tmp_path):
    for cert in (panicking(rule=""), {**panicking(), "source": None}, panicking(violation="panics")):
        verdict = verify(cert, pred=real(tmp_path))
        assert verdict.status == "rejected" and verdict.details["cause"] == "malformed", verdict


# -- not confirmed: doctored preds --------------------------------------------------------------
def test_the_same_source_with_a_rule_that_does_not_panic_is_rejected(tmp_path):
    """A build whose SteinerTree -> ILP reduces the zero-weight edge (a fixed rule)."""
    bundle = '{"path": [], "source": {}, "target": {"type": "ILP"}}'
    verdict = verify(panicking(), pred=doctored(tmp_path, reduce={"stdout": bundle, "exit": 0}))
    assert verdict.status == "rejected" and verdict.details["cause"] == "no_violation", verdict
    assert verdict.details["evidence"]["exit"] == 0


def test_an_instance_pred_itself_rejects_is_not_valid(tmp_path):
    """Without the rule, pred refuses the instance: whatever the rule does then, it is no bug."""
    error = "Error: Failed to deserialize `SteinerTree`: missing field `terminals`\n"
    verdict = verify(panicking(), pred=doctored(tmp_path, solve={"stderr": error, "exit": 1}))
    assert verdict.status == "rejected" and verdict.details["cause"] == "invalid_instance", verdict
    assert "not valid" in verdict.reason and "missing field `terminals`" in verdict.reason
    assert "exit" not in verdict.details["evidence"]  # never reduced


@pytest.mark.parametrize("subcommand", ["solve", "reduce"])
def test_a_usage_error_is_pred_refusing_the_call_not_an_answer(tmp_path, subcommand):
    """clap's exit 2 (a pred that does not know a flag the verifier passes) says nothing of the
    instance or the rule."""
    error = "error: unexpected argument '--json' found\n\nUsage: pred reduce [OPTIONS] <INPUT>\n"
    verdict = verify(panicking(), pred=doctored(tmp_path, **{subcommand: {"stderr": error, "exit": 2}}))
    assert verdict.status == "inconclusive" and verdict.details["cause"] == "pred_error", verdict


@pytest.mark.parametrize(
    "location",
    [
        "src/models/graph/steiner_tree.rs:131:27",  # the source problem's model
        "src/rules/steinertreeingraphs_ilp.rs:51:9",  # another rule, a name that contains this one's
        "src/rules/ilp_helpers.rs:40:5",  # a helper shared by many rules
        "src/rules/graph.rs:812:13",  # the reduction graph
        "problemreductions-cli/src/commands/reduce.rs:88:10",  # pred itself
        "/root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/highs-1.6.1/src/lib.rs:300:9",
    ],
)
def test_a_crash_elsewhere_in_pred_is_inconclusive(tmp_path, location):
    verdict = verify(panicking(), pred=doctored(tmp_path, reduce={"stderr": panic_at(location), "exit": 101}))
    assert verdict.status == "inconclusive" and verdict.details["cause"] == "panics_elsewhere", verdict
    assert f"panicked outside the rule's own source, at {location}" in verdict.reason


def test_a_panic_in_the_rules_file_under_a_build_path_is_the_rules(tmp_path):
    """pred built from crates.io names the library's files by their absolute path."""
    location = "/root/.cargo/registry/src/index.crates.io-x/problemreductions-0.5.0/src/rules/steinertree_ilp.rs:51:9"
    verdict = verify(panicking(), pred=doctored(tmp_path, reduce={"stderr": panic_at(location), "exit": 101}))
    assert verdict.accepted, verdict


def test_a_panic_header_inside_a_message_is_not_taken_for_the_rules(tmp_path):
    """A model's panic whose message quotes the instance (a string field, printed raw) could carry
    a header naming the rule's file after the real one: more than one header is inconclusive."""
    forged = panic_at("src/rules/steinertree_ilp.rs:51:9", "x").strip("\n")
    stderr = panic_at("src/models/graph/steiner_tree.rs:131:27", f"bad label:\n{forged}")
    verdict = verify(panicking(), pred=doctored(tmp_path, reduce={"stderr": stderr, "exit": 101}))
    assert verdict.status == "inconclusive" and verdict.details["cause"] == "panics_elsewhere", verdict
    assert "with 2 panics printed" in verdict.reason


def test_an_out_of_memory_kill_is_inconclusive_even_after_a_panic_line(tmp_path):
    stderr = panic_at("src/rules/steinertree_ilp.rs:51:9")
    verdict = verify(
        panicking(), pred=doctored(tmp_path, reduce={"stderr": stderr, "signal": signal.SIGKILL})
    )
    assert verdict.status == "inconclusive" and verdict.details["cause"] == "pred_error", verdict
    assert "was killed by SIGKILL (what the out-of-memory killer sends)" in verdict.reason


@pytest.mark.parametrize(
    ("exit", "stderr"),
    [(101, "thread 'main' overflowed\n"), (134, panic_at("src/rules/steinertree_ilp.rs:51:9"))],
)
def test_no_panic_location_or_another_exit_status_is_inconclusive(tmp_path, exit, stderr):  # fmt: skip
    verdict = verify(panicking(), pred=doctored(tmp_path, reduce={"stderr": stderr, "exit": exit}))
    assert verdict.status == "inconclusive", verdict


def test_a_reduction_that_never_ends_is_inconclusive(tmp_path):
    verdict = verify(panicking(), pred=doctored(tmp_path, reduce={"hang": True}), timeout=3)
    assert verdict.status == "inconclusive" and verdict.details["cause"] == "timeout", verdict


def test_a_missing_path_is_pred_refusing_never_the_rule(tmp_path):
    error = "Error: No witness-capable reduction path from SteinerTree to ILP\n\nHint: generate a path file\n"
    verdict = verify(panicking(), pred=doctored(tmp_path, reduce={"stderr": error, "exit": 1}))
    assert verdict.status == "rejected" and verdict.details["cause"] == "refused_by_pred", verdict
    assert "No witness-capable reduction path" in verdict.reason


def test_pred_panicking_on_the_instance_without_the_rule_is_inconclusive(tmp_path):
    stderr = panic_at("src/models/graph/steiner_tree.rs:131:27")
    verdict = verify(panicking(), pred=doctored(tmp_path, solve={"stderr": stderr, "exit": 101}))
    assert verdict.status == "inconclusive" and "src/models/graph/steiner_tree.rs" in verdict.reason


ROUND_TRIPS = [(n, b) for n, b in expected_cases() if n != PANIC_CERT]


@pytest.mark.parametrize(("name", "build"), ROUND_TRIPS or [pytest.param("-", "-", marks=NO_TRANSCRIPTS)])
def test_no_public_rule_is_confirmed_panicking_on_its_public_instance(name, build, tmp_path, misses):
    """The real pred answers every call: each rule reduces its instance (or pred has no such rule)."""
    verdict = verify(as_rule_failure(name), pred=real(tmp_path, build))
    assert not misses.exists(), misses.read_text()
    assert verdict.status == "rejected", verdict
    assert verdict.details["cause"] in ("no_violation", "unknown_rule")


def test_benchtui_verify_says_the_verdict_and_its_exit_status(tmp_path, capsys):
    from benchtui.cli import main as cli

    cert = tmp_path / "panic.json"
    cert.write_text(json.dumps(panicking()))
    assert cli.main(["verify", str(cert), "--pred", real(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("ACCEPTED: panics_on_valid_instance: pred reduce --to ILP/bool panicked at ")
    crash = doctored(tmp_path, reduce={"stderr": panic_at("src/rules/graph.rs:812:13"), "exit": 101})
    assert cli.main(["verify", str(cert), "--pred", crash, "--json"]) == 4
    (line,) = capsys.readouterr().out.splitlines()
    verdict = json.loads(line)
    assert verdict["cause"] == "tool_error" and verdict["details"]["pred_cause"] == "panics_elsewhere"


def test_no_shipped_task_is_confirmed_panicking_on_its_canonical_example(tmp_path, misses):
    """benchtui check's calls with 8df8ac04: every task's rule reduces its canonical example."""
    import tomllib

    from support import ROOT

    from benchtui.targets.problem_reductions.tasks import canonical_certificate, rule_list, rule_of

    pred = real(tmp_path)
    tasks = tomllib.loads((ROOT / "campaigns" / "problem-reductions.toml").read_text())["tasks"]
    rules, _ = rule_list(pred)
    for task in tasks:
        cert, problem = canonical_certificate(rule_of(task, rules), pred, timeout=60)
        assert cert is not None, problem
        claim = {"rule": task, "violation": "panics_on_valid_instance", "source": cert["source"]}
        verdict = verify(claim, pred=pred)
        assert verdict.status == "rejected" and verdict.details["cause"] == "no_violation", (task, verdict)
    assert not misses.exists(), misses.read_text()
