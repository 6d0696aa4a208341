"""The pred calls of the checks (sans-IO: generators yielding `PredCall`s) and reading their output.

What the real pred 0.5.0 needs, measured (../shared/tools/pred/README.md): `reduce --to` takes
TYPE's default variant unless the variant's values follow the type, bundles with intermediate
steps are reduced again along their own path (`--via`), configs are comma lists, and errors come
with hints, caught panic messages and (RUST_BACKTRACE=1) backtraces that verdicts leave out.
"""

from __future__ import annotations

import json
from collections.abc import Generator
from itertools import pairwise
from typing import Any

from .certificate import Finding, PredCall, PredResult, Value, parse_value
from .rules import Rule


class Stop(Exception):
    def __init__(self, verdict: Finding) -> None:
        self.verdict = verdict


def stop(status: str, reason: str, cause: str, **details: Any) -> Stop:
    return Stop(Finding(status, reason, {**details, "cause": cause}))  # type: ignore[arg-type]


def pred_json(
    args: tuple[str, ...], files: dict[str, Any], what: str
) -> Generator[PredCall, PredResult, dict[str, Any]]:
    """One pred call; anything but a JSON object on stdout stops the check as inconclusive."""
    result = yield PredCall(args, files)
    return json_of(result, what)


def error_line(stderr: str) -> str:
    """pred's own error, without the noise around it: hints, `Wrote FILE`, caught panic messages
    and Rust backtraces (RUST_BACKTRACE=1 adds one to every error)."""
    lines = [line.strip() for line in stderr.splitlines()]
    lines = lines[: lines.index("Stack backtrace:")] if "Stack backtrace:" in lines else lines
    start = next((i for i, line in enumerate(lines) if line.startswith("Error:")), None)
    clap = next((i for i, line in enumerate(lines) if line.startswith("error:")), None)
    if start is None and clap is not None:
        # clap's usage errors: `error: …` (and its `tip:` lines) up to the blank line before the
        # usage; its last line ("For more information, try '--help'.") says nothing.
        end = next((i for i in range(clap, len(lines)) if not lines[i]), len(lines))
        return " ".join(lines[clap:end])[:300]
    if start is None:
        return next((line for line in reversed(lines) if line), "")[:300]
    kept = [line for line in lines[start:] if line and line != "Caused by:"]
    return " ".join(kept)[:300]


def json_of(result: PredResult, what: str) -> dict[str, Any]:
    if result.failure == "timeout":
        raise stop("inconclusive", f"inconclusive: pred {what} timed out", "timeout")
    if result.failure == "missing":
        raise stop("inconclusive", f"pred is not available: {result.stderr}", "pred_missing")
    if result.returncode != 0:
        raise stop("inconclusive", f"pred {what} failed: {error_line(result.stderr)}", "pred_error")
    try:
        data = json.loads(result.stdout)
    except ValueError:
        data = None
    if not isinstance(data, dict):
        raise stop("inconclusive", f"pred {what} printed no JSON object", "pred_error")
    return data


def value_of(data: dict[str, Any], what: str, key: str = "evaluation") -> Value:
    value = parse_value(data.get(key))
    if value is None:
        raise stop("inconclusive", f"cannot read {key} {data.get(key)!r} of pred {what}", "pred_error")
    return value


def target_spec(problem: dict[str, Any]) -> str:
    """`TYPE/value/value` for `pred reduce --to`: without the values pred takes TYPE's default
    variant, and finds no path to, say, MaximumIndependentSet/SimpleGraph/i32."""
    variant = problem.get("variant")
    values = [str(v) for v in variant.values()] if isinstance(variant, dict) else []
    return "/".join([problem["type"], *values])


def via_file(path: Any) -> dict[str, Any] | None:
    """The bundle's own path as a `pred reduce --via` file, when it has intermediate steps."""
    steps = path if isinstance(path, list) else []
    if len(steps) < 3 or not all(isinstance(s, dict) and isinstance(s.get("name"), str) for s in steps):
        return None
    return {"path": [{"from": a, "to": b, "step": i + 1} for i, (a, b) in enumerate(pairwise(steps))]}


def reduce(
    source: dict[str, Any], claimed: dict[str, Any]
) -> Generator[PredCall, PredResult, dict[str, Any]]:
    files: dict[str, Any] = {"source.json": source}
    route = via_file(claimed.get("path"))
    if route is not None:
        via = yield PredCall(
            ("reduce", "source.json", "--via", "via.json", "--json"), {**files, "via.json": route}
        )
        if via.failure or via.returncode == 0:
            return json_of(via, "reduce --via")
    spec = target_spec(claimed["target"])
    return (yield from pred_json(("reduce", "source.json", "--to", spec, "--json"), files, "reduce"))


def lacks(result: PredResult, what: str) -> bool:
    """Whether this pred has no such subcommand or option: clap's usage error (exit 2) naming it.
    pred 0.3.0 has no `list --rules` (`error: unexpected argument '--rules' found`); 0.3.0, 0.4.0
    and 0.5.0 (the release) have no `extract` (`error: unrecognized subcommand 'extract'`)."""
    return (
        result.failure is None
        and result.returncode == 2
        and any(
            f"{said} '{what}'" in result.stderr for said in ("unexpected argument", "unrecognized subcommand")
        )
    )


def rule_inventory() -> Generator[PredCall, PredResult, list[Rule]]:
    """Every (source, target) rule of this pred: `list --rules --json` where pred has it (0.4 on),
    else the edges of `export-graph -o FILE` (pred 0.3: its nodes are `{name, variant}`, its edges
    index them), named the same way (`TYPE/value/value`, the variant's values in pred's order)."""
    listed = yield PredCall(("list", "--rules", "--json"))
    if not lacks(listed, "--rules"):
        data = json_of(listed, "list --rules")
        try:
            return [(str(r["source"]), str(r["target"])) for r in data["rules"]]
        except (KeyError, TypeError):
            raise stop(
                "inconclusive", "pred list --rules --json printed no rule list", "pred_error"
            ) from None
    exported = yield PredCall(("export-graph", "-o", "graph.json"), reads=("graph.json",))
    what = "export-graph (this pred has no `list --rules`)"
    if exported.failure or exported.returncode != 0:
        json_of(exported, what)  # its failure, as every other call's: inconclusive
    try:
        graph = json.loads(exported.outputs.get("graph.json", ""))
        nodes = ["/".join([n["name"], *map(str, n["variant"].values())]) for n in graph["nodes"]]
        return [(nodes[e["source"]], nodes[e["target"]]) for e in graph["edges"]]
    except (ValueError, KeyError, TypeError, IndexError, AttributeError):
        raise stop("inconclusive", f"pred {what} wrote no reduction graph", "pred_error") from None


def extract(
    bundle: dict[str, Any], config: list[int], details: dict[str, Any]
) -> Generator[PredCall, PredResult, dict[str, Any] | None]:
    """`pred extract --config 1,0,1` (pred takes comma lists only); None when pred refuses the
    certificate's configuration (wrong length, out of range): that claim shows nothing."""
    result = yield PredCall(
        ("extract", "bundle.json", "--config", ",".join(map(str, config)), "--json"), {"bundle.json": bundle}
    )
    if lacks(result, "extract"):
        details.setdefault("missing_routes", []).append("extract")
        return None
    if not result.failure and result.returncode != 0:
        details["extract_error"] = error_line(result.stderr)
        return None
    return json_of(result, "extract")


def canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))
