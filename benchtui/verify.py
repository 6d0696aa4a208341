"""Independent certificate verification with `pred` (DESIGN §6): re-derive, never trust the claim.

The checks are written once, as a generator that yields `PredCall`s and is sent `PredResult`s,
so the same logic runs synchronously (`benchtui verify CERT.json`) and under Trio (a runner,
cancellable at any call). Every call has a timeout; a timeout is *inconclusive*, never a bug.

A certificate is accepted only when pred itself shows the round trip failing on the certified
instance: the bundle must be what `pred reduce` produces, and then either solving the bundle and
extracting, or extracting the certificate's own (optimal) target configuration, gives a source
solution that is invalid or worse than the source's brute-force optimum.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Generator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

VIOLATIONS = ("unsound_extraction", "incomplete_reduction", "suboptimal_extraction")
BLOCK = re.compile(r"^[ \t]*CERTIFICATE_START[ \t]*\r?\n(.*?)^[ \t]*CERTIFICATE_END[ \t]*$", re.M | re.S)
FENCE = re.compile(r"^```[\w-]*\s*\n(.*)\n```\s*$", re.S)


@dataclass(frozen=True, slots=True)
class PredCall:
    args: tuple[str, ...]
    files: dict[str, Any] = field(default_factory=dict)
    """Written as JSON into the call's working directory first."""


@dataclass(frozen=True, slots=True)
class PredResult:
    returncode: int | None = None
    stdout: str = ""
    stderr: str = ""
    failure: Literal["timeout", "missing"] | None = None


@dataclass(frozen=True, slots=True)
class Verdict:
    status: Literal["accepted", "rejected", "inconclusive"]
    reason: str
    details: dict[str, Any] = field(default_factory=dict)

    @property
    def accepted(self) -> bool:
        return self.status == "accepted"

    def to_json(self) -> dict[str, Any]:
        return {"verifier": "benchtui.verify (pred round trip)", **asdict(self)}


class _Stop(Exception):
    def __init__(self, verdict: Verdict) -> None:
        self.verdict = verdict


# -- certificate blocks in agent output ---------------------------------------------------------
def find_blocks(text: str) -> list[str]:
    """The raw text of every CERTIFICATE_START … CERTIFICATE_END block (lines of their own)."""
    return [m.group(1) for m in BLOCK.finditer(text)]


def parse_block(raw: str) -> tuple[dict[str, Any] | None, str]:
    """(certificate, "") or (None, why it is malformed)."""
    body = raw.strip()
    fenced = FENCE.match(body)
    body = fenced.group(1) if fenced else body
    try:
        cert = json.loads(body)
    except ValueError as exc:
        return None, f"not JSON: {exc}"
    if not isinstance(cert, dict):
        return None, "not a JSON object"
    return cert, ""


# -- values pred prints ("Max(2)", "Min(None)", "Or(true)", "SolutionSize(3, valid)") -----------
@dataclass(frozen=True, slots=True)
class Value:
    valid: bool
    number: float | None
    text: str


def parse_value(raw: Any) -> Value | None:
    if isinstance(raw, bool):
        return Value(raw, None, str(raw))
    if isinstance(raw, int | float):
        return Value(True, float(raw), str(raw))
    if not isinstance(raw, str):
        return None
    text = raw.strip()
    match = re.fullmatch(r"\w+\((.*)\)", text, re.S)
    inner = (match.group(1) if match else text).strip()
    parts = [p.strip().lower() for p in inner.split(",")]
    if len(parts) == 2 and parts[1] in ("valid", "invalid"):
        return Value(parts[1] == "valid", _number(parts[0]), text)
    if parts[0] in ("none", "null", "false", "invalid", "infeasible", "true"):
        return Value(parts[0] == "true", None, text)
    number = _number(inner)
    return Value(True, number, text) if number is not None else None


def _number(raw: str) -> float | None:
    try:
        return float(raw)
    except ValueError:
        return None


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


def _json_of(result: PredResult, what: str) -> dict[str, Any]:
    if result.failure == "timeout":
        raise _stop("inconclusive", f"inconclusive: pred {what} timed out", "timeout")
    if result.failure == "missing":
        raise _stop("inconclusive", f"pred is not available: {result.stderr}", "pred_missing")
    if result.returncode != 0:
        raise _stop("inconclusive", f"pred {what} failed: {result.stderr.strip()[:300]}", "pred_error")
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


def _check(cert: dict[str, Any]) -> Generator[PredCall, PredResult, Verdict]:
    source, claimed = cert["source"], cert["bundle"]["target"]
    src = {"source.json": source}
    bundle = yield from _pred(("reduce", "source.json", "--to", claimed["type"], "--json"), src, "reduce")
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
    if trip.returncode not in (0, None) and optimum.valid:
        # No target solution at all, while the source has one: an incomplete reduction.
        target = yield from _pred(
            ("solve", "target.json", *brute), {"target.json": bundle["target"]}, "solve (target)"
        )
        if not _value_of(target, "solve (target)").valid:
            return Verdict(
                "accepted",
                f"incomplete_reduction: the target has no solution; the source optimum is {optimum.text}",
                {**details, "observed": "incomplete_reduction"},
            )
    trip_data = _json_of(trip, "solve (bundle)")
    details["round_trip"] = trip_data.get("evaluation")
    found = _round_trip_failure(optimum, _value_of(trip_data, "solve (bundle)"), "solve + extract")
    config = _config(cert["target_config"]) if "target_config" in cert else None
    if found is None and config is not None:
        # The certificate's own target configuration counts only if it is optimal for the target.
        extracted = yield from _extract(bundle, config)
        details["extracted"] = extracted.get("evaluation")
        mine = parse_value((extracted.get("intermediate") or {}).get("evaluation"))
        best = parse_value((trip_data.get("intermediate") or {}).get("evaluation"))
        if mine and best and mine.valid and best.valid and mine.number == best.number:
            found = _round_trip_failure(
                optimum, _value_of(extracted, "extract"), f"extracting the optimal target config {config}"
            )
    if found:
        return Verdict("accepted", found[1], {**details, "observed": found[0]})
    raise _stop(
        "rejected", f"the round trip recovers the source optimum {optimum.text}", "no_violation", **details
    )


def _extract(bundle: dict[str, Any], config: list[int]) -> Generator[PredCall, PredResult, dict[str, Any]]:
    """`pred extract`; configs are comma lists in older pred versions and JSON lists in newer ones."""
    result = PredResult()
    for form in (",".join(map(str, config)), json.dumps(config)):
        result = yield PredCall(
            ("extract", "bundle.json", "--config", form, "--json"), {"bundle.json": bundle}
        )
        if result.failure or result.returncode == 0:
            break
    return _json_of(result, "extract")


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


# -- drivers ---------------------------------------------------------------------------------------
def _drive(
    checks: Generator[PredCall, PredResult, Verdict], run: Callable[[PredCall], PredResult]
) -> Verdict:
    try:
        call = next(checks)
        while True:
            call = checks.send(run(call))
    except StopIteration as stop:
        return stop.value


def _prepare(call: PredCall, workdir: Path) -> None:
    for name, content in call.files.items():
        (workdir / name).write_text(json.dumps(content))


def resolve_pred(pred: str) -> str:
    """An absolute path for `pred` (calls run in temporary directories), or `pred` if not found."""
    found = shutil.which(pred)
    return os.path.abspath(found) if found else pred


def verify(cert: Any, *, pred: str = "pred", timeout: float = 60.0) -> Verdict:
    """Verify synchronously (the CLI); each pred call runs in a fresh temporary directory."""
    pred = resolve_pred(pred)

    def run(call: PredCall) -> PredResult:
        with tempfile.TemporaryDirectory(prefix="benchtui-verify-") as tmp:
            _prepare(call, Path(tmp))
            try:
                done = subprocess.run(
                    [pred, *call.args],
                    cwd=tmp,
                    capture_output=True,
                    text=True,
                    timeout=timeout,
                    stdin=subprocess.DEVNULL,
                )
            except subprocess.TimeoutExpired:
                return PredResult(failure="timeout")
            except OSError as exc:
                return PredResult(failure="missing", stderr=str(exc))
            return PredResult(done.returncode, done.stdout, done.stderr)

    return _drive(check(cert), run)


async def verify_async(cert: Any, *, pred: str = "pred", timeout: float = 60.0) -> Verdict:
    """Verify under Trio: cancelling it kills the running pred call at once."""
    import trio

    pred = resolve_pred(pred)

    async def kill(process: trio.Process) -> None:
        process.kill()

    async def run(call: PredCall) -> PredResult:
        with tempfile.TemporaryDirectory(prefix="benchtui-verify-") as tmp:
            _prepare(call, Path(tmp))
            with trio.move_on_after(timeout):
                try:
                    done = await trio.run_process(
                        [pred, *call.args],
                        cwd=tmp,
                        check=False,
                        stdin=b"",
                        capture_stdout=True,
                        capture_stderr=True,
                        deliver_cancel=kill,
                    )
                except OSError as exc:
                    return PredResult(failure="missing", stderr=str(exc))
                return PredResult(
                    done.returncode,
                    done.stdout.decode(errors="replace"),
                    done.stderr.decode(errors="replace"),
                )
            return PredResult(failure="timeout")

    checks = check(cert)
    try:
        call = next(checks)
        while True:
            call = checks.send(await run(call))
    except StopIteration as stop:
        return stop.value


# -- CLI: benchtui verify CERT.json [--pred PATH] ---------------------------------------------------
EXIT_ACCEPTED, EXIT_REJECTED, EXIT_BAD_INPUT, EXIT_INCONCLUSIVE = 0, 1, 2, 4


def main_verify(argv: list[str]) -> int:
    """Re-check certificates: a JSON certificate, or any text with CERTIFICATE_START blocks."""
    import argparse

    p = argparse.ArgumentParser(
        prog="benchtui verify",
        description=main_verify.__doc__,
        epilog="Exit status: 0 a bug is confirmed, 1 rejected, 4 inconclusive, 2 bad input.",
    )
    p.add_argument("certificate", type=Path, help="certificate JSON (or a log with certificate blocks)")
    p.add_argument("--pred", default="pred", help="the pred executable (default: pred on PATH)")
    p.add_argument("--timeout", type=float, default=60.0, help="seconds per pred call (default 60)")
    p.add_argument("--json", action="store_true", help="print verdicts as JSON lines")
    args = p.parse_args(argv)
    try:
        text = args.certificate.read_text()
    except (OSError, UnicodeDecodeError) as exc:
        print(f"benchtui verify: cannot read {args.certificate}: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    blocks = find_blocks(text) or [text]
    verdicts = []
    for raw in blocks:
        cert, problem = parse_block(raw)
        verdict = (
            verify(cert, pred=args.pred, timeout=args.timeout)
            if cert is not None
            else Verdict("rejected", f"malformed certificate: {problem}", {"cause": "malformed"})
        )
        verdicts.append(verdict)
        if args.json:
            print(json.dumps(verdict.to_json(), default=str))
        else:
            print(f"{verdict.status.upper()}: {verdict.reason}")
    if any(v.accepted for v in verdicts):
        return EXIT_ACCEPTED
    return EXIT_INCONCLUSIVE if all(v.status == "inconclusive" for v in verdicts) else EXIT_REJECTED
