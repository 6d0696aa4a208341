"""The sans-IO round-trip checks: generators that yield `PredCall`s and are sent `PredResult`s."""

from __future__ import annotations

import re
from collections.abc import Generator
from typing import Any

from .calls import Stop, canonical, error_line, extract, json_of, pred_json, reduce, stop, value_of
from .certificate import KINDS, RULE_FAILURES, Finding, PredCall, PredResult, Value, parse_value
from .failures import check_rule_failure


def _malformed(cert: Any) -> str:
    if not isinstance(cert, dict):
        return "not a JSON object"
    if not isinstance(cert.get("rule"), str) or not cert["rule"]:
        return "no rule"
    if cert.get("violation") not in KINDS:
        return f"violation must be one of {', '.join(KINDS)}"
    if not isinstance(cert.get("source"), dict) or not isinstance(cert["source"].get("type"), str):
        return "no source object with a type"
    if cert["violation"] in RULE_FAILURES:
        return ""  # a rule and a source: the reduction never returned a bundle
    target = cert.get("bundle", {}).get("target") if isinstance(cert.get("bundle"), dict) else None
    if not isinstance(target, dict) or not isinstance(target.get("type"), str):
        return "no bundle with a target with a type"
    if "target_config" in cert and _config(cert["target_config"]) is None:
        return "target_config is not a list of integers"
    return ""


def _config(raw: Any) -> list[int] | None:
    if isinstance(raw, str):
        raw = [p for p in re.split(r"[,\s]+", raw.strip().strip("[]")) if p]
    try:
        return [int(x) for x in raw] if isinstance(raw, list) else None
    except (TypeError, ValueError):
        return None


#: pred's own exit statuses (success, an error, a usage error); anything else is not an answer of
#: pred (a replaying stand-in's miss exits 97, a crash or a signal something else): inconclusive.
PRED_EXITS = (0, 1, 2)
BRUTE = ("--solver", "brute-force", "--json")
ILP = ("--json",)  # pred's default solver is ILP


def _is_decision(value: Value) -> bool:
    return value.text.split("(")[0] in ("Or", "And")


def _witness_failure(
    optimum: Value, target: Value | None, got: Value, what: str, *, optimal: bool
) -> tuple[str, str] | None:
    """(observed violation, reason) when a target witness shows the rule broken, else None.

    A witness counts when it is optimal for the target (`optimal`), or when the target is a
    decision problem and the witness is a yes (feasible = optimal there). A feasible witness of an
    optimisation target proves nothing: extracting a valid but non-optimal tour of a StackerCrane
    target may well give a non-circuit (upstream's false positive on the fixed HamiltonianCircuit
    -> StackerCrane)."""
    yes = target is not None and target.valid and _is_decision(target)
    if not (optimal or yes):
        return None
    if not optimum.valid and got.valid:
        raise stop(
            "inconclusive",
            f"pred is inconsistent: brute force finds no source solution but {what} gives {got.text}",
            "pred_error",
        )
    if optimum.valid and not got.valid:
        return (
            "unsound_extraction",
            f"{what} gives an invalid source solution ({got.text}); the source optimum is {optimum.text}",
        )
    if not optimum.valid and yes:
        return (
            "unsound_extraction",
            f"{what} starts from a feasible target solution ({target.text if target else ''}) "
            f"but the source has none ({optimum.text})",
        )
    if optimal and optimum.valid and optimum.number != got.number:
        return "suboptimal_extraction", f"{what} gives {got.text}; the source optimum is {optimum.text}"
    return None


def _target_value(data: dict[str, Any]) -> Value | None:
    return parse_value((data.get("intermediate") or {}).get("evaluation"))


def check(cert: Any) -> Generator[PredCall, PredResult, Finding]:
    """Verify one certificate; drive with `verify` (sync) or `verify_async` (Trio)."""
    if problem := _malformed(cert):
        return Finding("rejected", f"malformed certificate: {problem}", {"cause": "malformed"})
    if cert["violation"] in RULE_FAILURES:
        try:  # its own reading of pred's exit statuses: a panic (101) is what it looks for
            return (yield from check_rule_failure(cert))
        except Stop as stopped:
            return stopped.verdict
    checks = _check(cert)
    try:
        call = next(checks)
        while True:
            result = yield call
            if result.returncode is not None and result.returncode not in PRED_EXITS:
                # Not an answer of pred: never a verdict (a replay miss, a crash, a signal).
                line = error_line(result.stderr) or "no message"
                return Finding(
                    "inconclusive",
                    f"inconclusive: pred exited {result.returncode} ({line})",
                    {"cause": "pred_error", "exit": result.returncode},
                )
            call = checks.send(result)
    except StopIteration as done:
        return done.value  # type: ignore[no-any-return]
    except Stop as stopped:
        return stopped.verdict


def _accept(observed: str, text: str, claimed: str, details: dict[str, Any]) -> Finding:
    """A round-trip failure pred shows counts whatever the certificate claimed (both are kept)."""
    other = f" (the certificate claimed {claimed})" if claimed != observed else ""
    return Finding("accepted", f"{observed}: {text}{other}", {**details, "observed": observed})


def _check(cert: dict[str, Any]) -> Generator[PredCall, PredResult, Finding]:
    source, claimed = cert["source"], cert["bundle"]["target"]
    bundle = yield from reduce(source, cert["bundle"])
    details: dict[str, Any] = {
        "claimed_violation": cert["violation"],
        "path": [s.get("name") for s in bundle.get("path", []) if isinstance(s, dict)],
    }
    if canonical(bundle.get("target")) != canonical(claimed):
        raise stop(
            "rejected",
            "wrong_target: the bundle's target is not what `pred reduce` produces",
            "wrong_target",
            **details,
            pred_target=bundle.get("target"),
        )
    optimum, details["source_solver"] = yield from _source_optimum(source)
    details["source_optimum"] = optimum.text
    target_type = claimed["type"]
    files = {"bundle.json": bundle}
    found: tuple[str, str] | None = None
    known_best: Value | None = None  # the target's optimum, when a solver pred trusts found it
    trip = yield PredCall(("solve", "bundle.json", *BRUTE), files)
    brute_finished = trip.failure != "timeout"
    if brute_finished and not trip.failure and trip.returncode != 0:
        return (yield from _no_target_solution(bundle, trip, optimum, cert["violation"], details))
    if brute_finished:
        data = json_of(trip, "solve (bundle)")
        details["round_trip"] = data.get("evaluation")
        known_best = _target_value(data)
        found = _witness_failure(
            optimum, known_best, value_of(data, "solve (bundle)"), "solve + extract", optimal=True
        )
        details["found_by"] = "brute-force" if found else None
    if found is None and (not brute_finished or target_type == "ILP"):
        # ILP where brute force cannot finish, and where the target is itself an ILP (brute force
        # picks one optimum among many; the ILP solver another, extracted the same way).
        ilp = yield PredCall(("solve", "bundle.json", *ILP), files)
        if ilp.failure == "timeout":
            if not brute_finished:
                raise stop(
                    "inconclusive", "inconclusive: pred solve (bundle) timed out", "timeout", **details
                )
        elif ilp.failure or ilp.returncode != 0:
            details["ilp_error"] = error_line(ilp.stderr) if not ilp.failure else ilp.failure
        else:
            data = json_of(ilp, "solve --solver ilp (bundle)")
            details["ilp_round_trip"] = data.get("evaluation")
            exact = target_type == "ILP"  # ILP on a non-ILP target goes through other rules of pred
            value = _target_value(data)
            known_best = value if exact and known_best is None else known_best
            found = _witness_failure(
                optimum, value, value_of(data, "solve (bundle)"), "solve (ILP) + extract", optimal=exact
            )
            details["found_by"] = "ilp" if found else None
        if found is None and not brute_finished and target_type != "ILP":
            raise stop(
                "inconclusive",
                "inconclusive: pred solve --solver brute-force (bundle) timed out and the ILP round trip "
                "goes through other rules of pred",
                "timeout",
                **details,
            )
    config = _config(cert["target_config"]) if "target_config" in cert else None
    if found is None and config is not None:
        # The certificate's own target configuration, lifted by `pred extract` where pred has it;
        # it counts when it is optimal for the target (or a yes of a decision target).
        extracted = yield from extract(bundle, config, details)
        if extracted is not None:
            details["extracted"] = extracted.get("evaluation")
            mine = _target_value(extracted)
            optimal = bool(
                mine and known_best and mine.valid and known_best.valid and mine.number == known_best.number
            )
            found = _witness_failure(
                optimum,
                mine,
                value_of(extracted, "extract"),
                f"extracting the optimal target config {config}",
                optimal=optimal,
            )
            details["found_by"] = "extract" if found else None
    if found:
        return _accept(found[0], f"{found[1]} (found by {details['found_by']})", cert["violation"], details)
    details.pop("found_by", None)
    raise stop(
        "rejected",
        f"the round trip recovers the source optimum {optimum.text}{missing_routes(details)}",
        "no_violation",
        **details,
    )


def missing_routes(details: dict[str, Any]) -> str:
    """What a verdict's reason adds when this pred lacks a route the certificate asked for: the
    verdict rests on the round trips this build has (pred 0.3.0-0.5.0 have no `extract`)."""
    if "extract" not in details.get("missing_routes", ()):
        return ""
    return (
        " (this pred has no `pred extract`: the certificate's target_config was not lifted; "
        "the solver round trips, which need none, were run)"
    )


def _source_optimum(source: dict[str, Any]) -> Generator[PredCall, PredResult, tuple[Value, str]]:
    """The source solved directly: brute force, or ILP where the source is an ILP and brute force
    cannot finish (an ILP solve of another problem goes through other rules of pred)."""
    files = {"source.json": source}
    result = yield PredCall(("solve", "source.json", *BRUTE), files)
    if result.failure == "timeout" and source.get("type") == "ILP":
        result = yield PredCall(("solve", "source.json", *ILP), files)
        return value_of(json_of(result, "solve (source)"), "solve"), "ilp"
    return value_of(json_of(result, "solve (source)"), "solve"), "brute-force"


def _no_target_solution(
    bundle: dict[str, Any], trip: PredResult, optimum: Value, claimed: str, details: dict[str, Any]
) -> Generator[PredCall, PredResult, Finding]:
    """Real pred exits 1 solving a bundle whose target has no solution at all: ask the target alone."""
    target = yield from pred_json(
        ("solve", "target.json", *BRUTE), {"target.json": bundle["target"]}, "solve (target)"
    )
    none = value_of(target, "solve (target)")
    details["target_optimum"] = none.text
    if none.valid:
        json_of(trip, "solve (bundle)")  # the bundle's own error: inconclusive
    if not optimum.valid:
        raise stop(
            "rejected",
            f"neither the source ({optimum.text}) nor the target ({none.text}) has a solution",
            "no_violation",
            **details,
        )
    if _is_decision(none) and not _is_decision(optimum):
        # An optimisation source always has a best value; a decision target only answers
        # whether the source's intended yes-case holds (e.g. Factoring -> CircuitSAT for a
        # prime): pred's round trip cannot tell such a no-instance from a bug.
        raise stop(
            "rejected",
            f"the decision target has no solution ({none.text}) and the optimisation source's "
            f"best value {optimum.text} does not contradict it",
            "no_violation",
            **details,
        )
    details["found_by"] = "brute-force"
    return _accept(
        "incomplete_reduction",
        f"the target has no solution ({none.text}); the source optimum is {optimum.text} (found by brute-force)",
        claimed,
        details,
    )
