"""The verifier's routes and what counts as a bug, driven sans-IO with scripted pred answers.

`check()` yields the pred calls it wants and is sent their results; these tests answer the way the
real pred does (shapes of `pred solve` on a bundle: `evaluation` of the extracted source solution,
`intermediate.evaluation` of the target's) to pin down each rule of the verdict.
"""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from benchtui.targets.problem_reductions import PredCall, PredResult, check

SOURCE = {"type": "Src", "variant": {}, "data": {"n": 2}}
TARGET = {"type": "Tgt", "variant": {}, "data": {"m": 3}}
ILP_TARGET = {"type": "ILP", "variant": {"variable": "bool"}, "data": {"m": 3}}
TIMEOUT = PredResult(failure="timeout")


def cert(target=TARGET, **extra) -> dict:
    bundle = {"path": [{"name": "Src", "variant": {}}, {"name": target["type"]}], "source": SOURCE}
    return {"rule": "Src -> Tgt", "violation": "unsound_extraction", "source": SOURCE,
            "bundle": {**bundle, "target": target}, **extra}  # fmt: skip


def ok(data: dict) -> PredResult:
    return PredResult(0, json.dumps(data), "")


def trip(source: str, target: str) -> PredResult:
    return ok({"evaluation": source, "intermediate": {"evaluation": target}})


def run(certificate: dict, answer: Callable[[PredCall], PredResult]) -> tuple[object, list[tuple]]:
    calls: list[tuple] = []
    checks = check(certificate)
    try:
        call = next(checks)
        while True:
            calls.append(call.args)
            call = checks.send(answer(call))
    except StopIteration as done:
        return done.value, calls


def pred(certificate: dict, *, source: str, brute, ilp=None, extract=None):
    """Answers: reduce gives the certificate's bundle; the rest as given."""

    def answer(call: PredCall) -> PredResult:
        command, file, *rest = call.args
        if command == "reduce":
            return ok(certificate["bundle"])
        if command == "solve" and file == "source.json":
            return ok({"evaluation": source})
        if command == "solve" and "brute-force" in rest:
            return brute
        if command == "solve":
            assert ilp is not None, f"ILP was not expected here: {call.args}"
            return ilp
        if command == "extract":
            assert extract is not None, call.args
            return extract
        raise AssertionError(call.args)

    return run(certificate, answer)


def test_a_decision_yes_witness_for_a_source_without_solution_is_unsound():
    verdict, _ = pred(cert(), source="Or(false)", brute=trip("Or(false)", "Or(true)"))
    assert verdict.status == "accepted" and verdict.details["observed"] == "unsound_extraction"
    assert "the source has none" in verdict.reason and verdict.details["found_by"] == "brute-force"


def test_a_feasible_but_not_optimal_witness_of_an_optimisation_target_proves_nothing():
    """HamiltonianCircuit -> StackerCrane: any tour is feasible; a non-optimal one may extract to a
    non-circuit (upstream's false positive)."""
    c = cert(target_config="0,1,2")
    verdict, _ = pred(
        c, source="Or(true)", brute=trip("Or(true)", "Min(3)"), extract=trip("Or(false)", "Min(5)")
    )
    assert verdict.status == "rejected" and verdict.details["cause"] == "no_violation", verdict


def test_an_optimal_target_witness_extracting_to_an_invalid_source_is_unsound():
    c = cert(target_config="0,1,2")
    verdict, _ = pred(
        c, source="Or(true)", brute=trip("Or(true)", "Min(3)"), extract=trip("Or(false)", "Min(3)")
    )
    assert verdict.accepted and verdict.details["observed"] == "unsound_extraction"
    assert verdict.details["found_by"] == "extract"


def test_an_optimal_witness_extracting_to_a_worse_source_is_suboptimal():
    c = cert(target_config="0,1,2")
    verdict, _ = pred(c, source="Max(4)", brute=trip("Max(4)", "Min(3)"), extract=trip("Max(2)", "Min(3)"))
    assert verdict.accepted and verdict.details["observed"] == "suboptimal_extraction"


def test_brute_force_finding_nothing_on_a_non_ilp_target_asks_no_ilp():
    verdict, calls = pred(cert(), source="Max(4)", brute=trip("Max(4)", "Min(3)"))
    assert verdict.status == "rejected"
    assert ("solve", "bundle.json", "--json") not in calls


def test_an_ilp_target_is_also_solved_by_ilp_and_says_so():
    verdict, calls = pred(
        cert(ILP_TARGET), source="Min(1)", brute=trip("Min(1)", "Min(1)"), ilp=trip("Min(2)", "Min(1)")
    )
    assert ("solve", "bundle.json", "--json") in calls
    assert verdict.accepted and verdict.details["found_by"] == "ilp" and "(found by ilp)" in verdict.reason


def test_where_brute_force_cannot_finish_ilp_on_an_ilp_target_decides():
    verdict, _ = pred(cert(ILP_TARGET), source="Min(1)", brute=TIMEOUT, ilp=trip("Min(2)", "Min(1)"))
    assert verdict.accepted and verdict.details["found_by"] == "ilp"
    fine, _ = pred(cert(ILP_TARGET), source="Min(1)", brute=TIMEOUT, ilp=trip("Min(1)", "Min(1)"))
    assert fine.status == "rejected"


def test_ilp_through_other_rules_is_in_doubt_its_suboptimal_answer_is_no_verdict():
    verdict, _ = pred(cert(), source="Min(1)", brute=TIMEOUT, ilp=trip("Min(2)", "Min(1)"))
    assert verdict.status == "inconclusive" and verdict.details["cause"] == "timeout", verdict


def test_ilp_through_other_rules_still_shows_a_decision_yes_extracting_to_nothing():
    verdict, _ = pred(cert(), source="Or(true)", brute=TIMEOUT, ilp=trip("Or(false)", "Or(true)"))
    assert verdict.accepted and verdict.details["found_by"] == "ilp"


def test_both_solvers_timing_out_is_inconclusive():
    verdict, _ = pred(cert(ILP_TARGET), source="Min(1)", brute=TIMEOUT, ilp=TIMEOUT)
    assert verdict.status == "inconclusive" and verdict.details["cause"] == "timeout"


@pytest.mark.parametrize("status", [3, 97, 101, -9])
def test_an_exit_status_pred_never_gives_is_inconclusive_at_any_call(status):
    strange = PredResult(status, "", "not recorded: []")
    for step in range(4):
        seen = []

        def answer(call: PredCall, step=step, seen=seen) -> PredResult:
            seen.append(call)
            if len(seen) - 1 == step:
                return strange
            if call.args[0] == "reduce":
                return ok(cert(ILP_TARGET)["bundle"])
            if call.args[1] == "source.json":
                return ok({"evaluation": "Min(1)"})
            return trip("Min(1)", "Min(1)")

        verdict, _ = run(cert(ILP_TARGET, target_config="1,0,1"), answer)
        assert verdict.status == "inconclusive" and verdict.details["exit"] == status, (step, verdict)


def test_clap_usage_errors_show_their_error_line():
    from benchtui.targets.problem_reductions.calls import error_line

    stderr = "error: unrecognized subcommand 'extract'\n\nUsage: pred [OPTIONS] <COMMAND>\n\nFor more information, try '--help'.\n"
    assert error_line(stderr) == "error: unrecognized subcommand 'extract'"
    hint = "Error: No path\n\nHint: make one\n"
    assert error_line(hint) == "Error: No path Hint: make one"


def test_a_certificate_is_on_task_only_when_its_rule_and_its_instance_name_the_task():
    from benchtui.targets.problem_reductions.tasks import on_task

    def c(rule, source, target):
        return {"rule": rule, "source": {"type": source}, "bundle": {"target": {"type": target}}}

    assert on_task(c("binpacking_ilp", "BinPacking", "ILP"), "binpacking_ilp")
    assert on_task(c("BinPacking -> ILP/bool", "BinPacking", "ILP"), "binpacking_ilp")
    assert on_task(c("MaximumIndependentSetToMinimumVertexCover", "MaximumIndependentSet", "MinimumVertexCover"),
                   "maximumindependentset_minimumvertexcover")  # fmt: skip
    assert on_task(
        c("Satisfiability -> MaximumIndependentSet", "Satisfiability", "MaximumIndependentSet"),
        "sat_maximumindependentset",
    )  # fmt: skip  (the shipped table's names)
    # A shortlist episode's task is an inventory rule, `SOURCE/variant -> TARGET/variant`.
    episode = "MaximumIndependentSet/SimpleGraph/i32 -> MinimumVertexCover/SimpleGraph/i32"
    mis_mvc = c("MaximumIndependentSetToMinimumVertexCover", "MaximumIndependentSet", "MinimumVertexCover")
    assert on_task(mis_mvc, episode)
    assert not on_task(c("knapsack_ilp", "Knapsack", "ILP"), episode)
    # Another rule, or the task's name over an instance of another rule: off task.
    assert not on_task(c("knapsack_ilp", "Knapsack", "ILP"), "binpacking_ilp")
    assert not on_task(c("binpacking_ilp", "MinimumVertexCover", "EnsembleComputation"), "binpacking_ilp")
