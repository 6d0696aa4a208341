"""The sans-IO round-trip checks: generators that yield `PredCall`s and are sent `PredResult`s."""

from __future__ import annotations

import re
from collections.abc import Generator
from typing import Any

from .calls import Stop, canonical, extract, json_of, pred_json, reduce, stop, value_of
from .certificate import VIOLATIONS, PredCall, PredResult, Value, Verdict, parse_value


def _malformed(cert: Any) -> str:
    if not isinstance(cert, dict):
        return "not a JSON object"
    if not isinstance(cert.get("rule"), str) or not cert["rule"]:
        return "no rule"
    if cert.get("violation") not in VIOLATIONS:
        return f"violation must be one of {', '.join(VIOLATIONS)}"
    if not isinstance(cert.get("source"), dict) or not isinstance(cert["source"].get("type"), str):
        return "no source object with a type"
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


def _round_trip_failure(optimum: Value, got: Value, what: str) -> tuple[str, str] | None:
    """(observed violation, reason) when `got` is not the source optimum, else None."""
    if optimum.valid and not got.valid:
        return (
            "unsound_extraction",
            f"{what} gives an invalid source solution ({got.text}); the source optimum is {optimum.text}",
        )
    if not optimum.valid and got.valid:
        raise stop(
            "inconclusive",
            f"pred is inconsistent: brute force finds no source solution but {what} gives {got.text}",
            "pred_error",
        )
    if optimum.valid and optimum.number != got.number:
        return "suboptimal_extraction", f"{what} gives {got.text}; the source optimum is {optimum.text}"
    return None


def check(cert: Any) -> Generator[PredCall, PredResult, Verdict]:
    """Verify one certificate; drive with `verify` (sync) or `verify_async` (Trio)."""
    if problem := _malformed(cert):
        return Verdict("rejected", f"malformed certificate: {problem}", {"cause": "malformed"})
    try:
        return (yield from _check(cert))
    except Stop as stop:
        return stop.verdict


def _is_decision(value: Value) -> bool:
    return value.text.split("(")[0] in ("Or", "And")


def _accept(observed: str, text: str, claimed: str, details: dict[str, Any]) -> Verdict:
    """A round-trip failure pred shows counts whatever the certificate claimed (both are kept)."""
    other = f" (the certificate claimed {claimed})" if claimed != observed else ""
    return Verdict("accepted", f"{observed}: {text}{other}", {**details, "observed": observed})


def _check(cert: dict[str, Any]) -> Generator[PredCall, PredResult, Verdict]:
    source, claimed = cert["source"], cert["bundle"]["target"]
    src = {"source.json": source}
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
    brute = ("--solver", "brute-force", "--json")
    optimum = value_of(
        (yield from pred_json(("solve", "source.json", *brute), src, "solve (source)")), "solve"
    )
    details["source_optimum"] = optimum.text
    trip = yield PredCall(("solve", "bundle.json", *brute), {"bundle.json": bundle})
    if not trip.failure and trip.returncode != 0:
        # Real pred exits 1 here when the target has no solution at all: ask the target alone.
        target = yield from pred_json(
            ("solve", "target.json", *brute), {"target.json": bundle["target"]}, "solve (target)"
        )
        none = value_of(target, "solve (target)")
        details["target_optimum"] = none.text
        if not none.valid:
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
            return _accept(
                "incomplete_reduction",
                f"the target has no solution ({none.text}); the source optimum is {optimum.text}",
                cert["violation"],
                details,
            )
    trip_data = json_of(trip, "solve (bundle)")
    details["round_trip"] = trip_data.get("evaluation")
    found = _round_trip_failure(optimum, value_of(trip_data, "solve (bundle)"), "solve + extract")
    config = _config(cert["target_config"]) if "target_config" in cert else None
    if found is None and config is not None:
        # The certificate's own target configuration counts only if it is optimal for the target.
        extracted = yield from extract(bundle, config, details)
        if extracted is not None:
            details["extracted"] = extracted.get("evaluation")
            mine = parse_value((extracted.get("intermediate") or {}).get("evaluation"))
            best = parse_value((trip_data.get("intermediate") or {}).get("evaluation"))
            if mine and best and mine.valid and best.valid and mine.number == best.number:
                found = _round_trip_failure(
                    optimum, value_of(extracted, "extract"), f"extracting the optimal target config {config}"
                )
    if found:
        return _accept(found[0], found[1], cert["violation"], details)
    raise stop(
        "rejected", f"the round trip recovers the source optimum {optimum.text}", "no_violation", **details
    )
