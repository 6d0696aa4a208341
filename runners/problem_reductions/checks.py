"""The sans-IO round-trip checks: generators that yield `PredCall`s and are sent `PredResult`s."""

from __future__ import annotations

import json
import re
from collections.abc import Generator
from itertools import pairwise
from typing import Any

from .certificate import VIOLATIONS, PredCall, PredResult, Value, Verdict, parse_value


class _Stop(Exception):
    def __init__(self, verdict: Verdict) -> None:
        self.verdict = verdict


# -- the checks ------------------------------------------------------------------------------------
def _stop(status: str, reason: str, cause: str, **details: Any) -> _Stop:
    return _Stop(Verdict(status, reason, {**details, "cause": cause}))  # type: ignore[arg-type]


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


def _pred(args: tuple[str, ...], files: dict[str, Any], what: str) -> Generator[PredCall, PredResult, dict]:
    """One pred call; anything but a JSON object on stdout stops the check as inconclusive."""
    result = yield PredCall(args, files)
    return _json_of(result, what)


def error_line(stderr: str) -> str:
    """pred's own error, without the noise around it: hints, `Wrote FILE`, caught panic messages
    and Rust backtraces (RUST_BACKTRACE=1 adds one to every error)."""
    lines = [line.strip() for line in stderr.splitlines()]
    lines = lines[: lines.index("Stack backtrace:")] if "Stack backtrace:" in lines else lines
    start = next((i for i, line in enumerate(lines) if line.startswith("Error:")), None)
    if start is None:
        return next((line for line in reversed(lines) if line), "")[:300]
    kept = [line for line in lines[start:] if line and line != "Caused by:"]
    return " ".join(kept)[:300]


def _json_of(result: PredResult, what: str) -> dict[str, Any]:
    if result.failure == "timeout":
        raise _stop("inconclusive", f"inconclusive: pred {what} timed out", "timeout")
    if result.failure == "missing":
        raise _stop("inconclusive", f"pred is not available: {result.stderr}", "pred_missing")
    if result.returncode != 0:
        raise _stop("inconclusive", f"pred {what} failed: {error_line(result.stderr)}", "pred_error")
    try:
        data = json.loads(result.stdout)
    except ValueError:
        data = None
    if not isinstance(data, dict):
        raise _stop("inconclusive", f"pred {what} printed no JSON object", "pred_error")
    return data


def _value_of(data: dict[str, Any], what: str, key: str = "evaluation") -> Value:
    value = parse_value(data.get(key))
    if value is None:
        raise _stop("inconclusive", f"cannot read {key} {data.get(key)!r} of pred {what}", "pred_error")
    return value


def _round_trip_failure(optimum: Value, got: Value, what: str) -> tuple[str, str] | None:
    """(observed violation, reason) when `got` is not the source optimum, else None."""
    if optimum.valid and not got.valid:
        return (
            "unsound_extraction",
            f"{what} gives an invalid source solution ({got.text}); the source optimum is {optimum.text}",
        )
    if not optimum.valid and got.valid:
        raise _stop(
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
    except _Stop as stop:
        return stop.verdict


def target_spec(problem: dict[str, Any]) -> str:
    """`TYPE/value/value` for `pred reduce --to`: without the values pred takes TYPE's default
    variant, and finds no path to, say, MaximumIndependentSet/SimpleGraph/i32."""
    variant = problem.get("variant")
    values = [str(v) for v in variant.values()] if isinstance(variant, dict) else []
    return "/".join([problem["type"], *values])


def _route(path: Any) -> dict[str, Any] | None:
    """The bundle's own path as a `pred reduce --via` file, when it has intermediate steps."""
    steps = path if isinstance(path, list) else []
    if len(steps) < 3 or not all(isinstance(s, dict) and isinstance(s.get("name"), str) for s in steps):
        return None
    return {"path": [{"from": a, "to": b, "step": i + 1} for i, (a, b) in enumerate(pairwise(steps))]}


def _reduce(source: dict[str, Any], claimed: dict[str, Any]) -> Generator[PredCall, PredResult, dict]:
    files: dict[str, Any] = {"source.json": source}
    route = _route(claimed.get("path"))
    if route is not None:
        via = yield PredCall(
            ("reduce", "source.json", "--via", "via.json", "--json"), {**files, "via.json": route}
        )
        if via.failure or via.returncode == 0:
            return _json_of(via, "reduce --via")
    spec = target_spec(claimed["target"])
    return (yield from _pred(("reduce", "source.json", "--to", spec, "--json"), files, "reduce"))


def _is_decision(value: Value) -> bool:
    return value.text.split("(")[0] in ("Or", "And")


def _accept(observed: str, text: str, claimed: str, details: dict[str, Any]) -> Verdict:
    """A round-trip failure pred shows counts whatever the certificate claimed (both are kept)."""
    other = f" (the certificate claimed {claimed})" if claimed != observed else ""
    return Verdict("accepted", f"{observed}: {text}{other}", {**details, "observed": observed})


def _check(cert: dict[str, Any]) -> Generator[PredCall, PredResult, Verdict]:
    source, claimed = cert["source"], cert["bundle"]["target"]
    src = {"source.json": source}
    bundle = yield from _reduce(source, cert["bundle"])
    details: dict[str, Any] = {
        "claimed_violation": cert["violation"],
        "path": [s.get("name") for s in bundle.get("path", []) if isinstance(s, dict)],
    }
    if _canonical(bundle.get("target")) != _canonical(claimed):
        raise _stop(
            "rejected",
            "wrong_target: the bundle's target is not what `pred reduce` produces",
            "wrong_target",
            **details,
            pred_target=bundle.get("target"),
        )
    brute = ("--solver", "brute-force", "--json")
    optimum = _value_of((yield from _pred(("solve", "source.json", *brute), src, "solve (source)")), "solve")
    details["source_optimum"] = optimum.text
    trip = yield PredCall(("solve", "bundle.json", *brute), {"bundle.json": bundle})
    if not trip.failure and trip.returncode != 0:
        # Real pred exits 1 here when the target has no solution at all: ask the target alone.
        target = yield from _pred(
            ("solve", "target.json", *brute), {"target.json": bundle["target"]}, "solve (target)"
        )
        none = _value_of(target, "solve (target)")
        details["target_optimum"] = none.text
        if not none.valid:
            if not optimum.valid:
                raise _stop(
                    "rejected",
                    f"neither the source ({optimum.text}) nor the target ({none.text}) has a solution",
                    "no_violation",
                    **details,
                )
            if _is_decision(none) and not _is_decision(optimum):
                # An optimisation source always has a best value; a decision target only answers
                # whether the source's intended yes-case holds (e.g. Factoring -> CircuitSAT for a
                # prime): pred's round trip cannot tell such a no-instance from a bug.
                raise _stop(
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
    trip_data = _json_of(trip, "solve (bundle)")
    details["round_trip"] = trip_data.get("evaluation")
    found = _round_trip_failure(optimum, _value_of(trip_data, "solve (bundle)"), "solve + extract")
    config = _config(cert["target_config"]) if "target_config" in cert else None
    if found is None and config is not None:
        # The certificate's own target configuration counts only if it is optimal for the target.
        extracted = yield from _extract(bundle, config, details)
        if extracted is not None:
            details["extracted"] = extracted.get("evaluation")
            mine = parse_value((extracted.get("intermediate") or {}).get("evaluation"))
            best = parse_value((trip_data.get("intermediate") or {}).get("evaluation"))
            if mine and best and mine.valid and best.valid and mine.number == best.number:
                found = _round_trip_failure(
                    optimum, _value_of(extracted, "extract"), f"extracting the optimal target config {config}"
                )
    if found:
        return _accept(found[0], found[1], cert["violation"], details)
    raise _stop(
        "rejected", f"the round trip recovers the source optimum {optimum.text}", "no_violation", **details
    )


def _extract(
    bundle: dict[str, Any], config: list[int], details: dict[str, Any]
) -> Generator[PredCall, PredResult, dict[str, Any] | None]:
    """`pred extract --config 1,0,1` (pred takes comma lists only); None when pred refuses the
    certificate's configuration (wrong length, out of range): that claim shows nothing."""
    result = yield PredCall(
        ("extract", "bundle.json", "--config", ",".join(map(str, config)), "--json"), {"bundle.json": bundle}
    )
    if not result.failure and result.returncode != 0:
        details["extract_error"] = error_line(result.stderr)
        return None
    return _json_of(result, "extract")


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))
