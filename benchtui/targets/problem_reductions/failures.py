"""The sans-IO check of a rule that fails on a valid instance: a `panics_on_valid_instance` or
`rejects_valid_instance` certificate (a rule and a source instance; no bundle, no target config).

Confirmed only when pred shows both halves (docs/guide/verify.md#a-rule-that-fails-on-a-valid-instance):
1. the instance is valid: pred loads it and solves it on its own, without the rule (`pred solve
   --solver brute-force`: every configuration evaluated by the source problem's own code);
2. reducing it by that rule (`pred reduce source.json --to TARGET`, from an instance of the rule's
   declared source variant to its target variant: a path of this rule alone) panics in the rule's
   own source file (`thread 'main' panicked at src/rules/<stem>.rs:…`, exit 101).

A rule of problem-reductions refuses an instance only from its own code: its `reduce_to` returns
no error (`src/rules/traits.rs`), so it refuses with a panic (an `assert!`, an `expect`). Every
`Error:` of `pred reduce` (exit 1) is pred's own: no witness-capable path, a variant no rule
declares, an instance it cannot load. So both kinds rest on the same evidence, and an exit 1 is
never read as the rule's refusal.
"""

from __future__ import annotations

import re
import signal
from collections.abc import Generator
from dataclasses import dataclass
from typing import Any

from .calls import error_line, json_of, rule_inventory, stop, value_of
from .certificate import Finding, PredCall, PredResult, Value
from .rules import Rule, of_instance, own_files, rules_named

#: The exit status of a Rust program whose main thread panicked (../shared/tools/pred/README.md).
RUST_PANIC = 101
BRUTE = ("--solver", "brute-force", "--json")
PANIC = re.compile(
    r"^thread '(?P<thread>[^'\n]*)'(?: \([^)\n]*\))? panicked at "
    r"(?P<file>[^\n]+?):(?P<line>\d+):(?P<column>\d+):[ \t]*\r?\n(?P<message>[^\n]*)",
    re.M,
)
RULE_FILE = re.compile(r"(?:^|/)src/rules/(?P<stem>[a-z0-9_]+)\.rs$")


@dataclass(frozen=True, slots=True)
class Panic:
    """A panic pred printed: where, and the first line of its message."""

    file: str
    location: str
    message: str


def panics(stderr: str) -> list[Panic]:
    """Every panic header in pred's stderr, in order."""
    return [
        Panic(m["file"], f"{m['file']}:{m['line']}:{m['column']}"[:300], m["message"].strip()[:300])
        for m in PANIC.finditer(stderr)
    ]


def _ended(returncode: int) -> str:
    if returncode >= 0:
        return f"exited {returncode}"
    try:
        name = signal.Signals(-returncode).name
    except ValueError:
        name = f"signal {-returncode}"
    oom = " (what the out-of-memory killer sends)" if -returncode == signal.SIGKILL else ""
    return f"was killed by {name}{oom}"


def check_rule_failure(cert: dict[str, Any]) -> Generator[PredCall, PredResult, Finding]:
    claimed, source = cert["violation"], cert["source"]
    details: dict[str, Any] = {"claimed_violation": claimed}
    rule = yield from _rule(cert["rule"], source)
    details["pred_rule"] = f"{rule[0]} -> {rule[1]}"
    evidence: dict[str, Any] = {}
    details["evidence"] = evidence
    optimum = yield from _valid(source, evidence, details)
    details["source_optimum"], details["source_solver"] = optimum.text, "brute-force"
    command = ("reduce", "source.json", "--to", rule[1], "--json")
    evidence["reduce"] = "pred " + " ".join(command)
    result = yield PredCall(command, {"source.json": source})
    panic = _rules_own_panic(result, rule, details)
    details.update(observed=claimed, found_by="reduce", cause="panics_in_rule")
    return Finding(
        "accepted",
        f"{claimed}: pred reduce --to {rule[1]} panicked at {panic.location}, the rule's own source "
        f"(exit {RUST_PANIC}): {panic.message}; the source instance is valid: brute force solves it "
        f"({optimum.text}) (found by reduce)",
        details,
    )


def _rules_own_panic(result: PredResult, rule: Rule, details: dict[str, Any]) -> Panic:
    """The one panic of `pred reduce` when it is in the rule's own source; anything else stops the
    check: rejected where pred answers (it reduces the instance, or its own error refuses it),
    inconclusive where it does not say (a timeout, a usage error, a kill, a panic elsewhere)."""
    what, evidence = f"pred reduce --to {rule[1]}", details["evidence"]
    if result.failure == "timeout":
        raise stop("inconclusive", f"{what} timed out: neither a panic nor a refusal", "timeout", **details)
    if result.failure:
        json_of(result, f"reduce --to {rule[1]}")  # pred is missing: raises, inconclusive
    returncode = evidence["exit"] = int(result.returncode or 0)
    if returncode == 0:
        raise stop(
            "rejected",
            f"{what} reduces the instance (exit 0): the rule neither panics on it nor refuses it",
            "no_violation",
            **details,
        )
    if returncode == 1:
        raise stop(
            "rejected",
            f"{what} exits 1 with pred's own error, not the rule's: "
            f"{error_line(result.stderr) or 'no message'} (a rule refuses an instance only by "
            "panicking in its own source)",
            "refused_by_pred",
            **details,
        )
    if returncode == 2:  # a usage error: pred refused the call, not the instance
        raise stop("inconclusive", f"{what} failed: {error_line(result.stderr)}", "pred_error", **details)
    printed = panics(result.stderr)
    if printed:
        evidence.update(panic=printed[-1].location, message=printed[-1].message)
    if returncode != RUST_PANIC:
        after = f" after a panic at {printed[-1].location}" if printed else ""
        raise stop(
            "inconclusive",
            f"{what} {_ended(returncode)}{after}: not an answer of pred",
            "pred_error",
            **details,
        )
    if len(printed) != 1:
        # One panic ends `pred reduce`; more headers are panics caught before it, or a header
        # inside a panic's message (which may quote the instance): which one ended pred is unsure.
        where = ", ".join(p.location for p in printed)[:300]
        raise stop(
            "inconclusive",
            f"{what} exited {RUST_PANIC} with {len(printed)} panics printed{f' ({where})' if where else ''}: "
            "not one located panic",
            "panics_elsewhere",
            **details,
        )
    (panic,) = printed
    stem = RULE_FILE.search(panic.file)
    if stem is None or stem["stem"] not in own_files(rule):
        raise stop(
            "inconclusive",
            f"{what} panicked outside the rule's own source, at {panic.location}: {panic.message} "
            "(a crash elsewhere in pred is not shown to be this rule's)",
            "panics_elsewhere",
            **details,
        )
    return panic


def _rule(name: str, source: dict[str, Any]) -> Generator[PredCall, PredResult, Rule]:
    """The rule of pred the certificate names, declared for the instance's source variant."""
    rules = yield from rule_inventory()
    named = rules_named(name, rules)
    if not named:
        raise stop(
            "rejected", f"pred has no rule {name[:200]!r} (among its {len(rules)} rules)", "unknown_rule"
        )
    mine = [r for r in named if of_instance(r, source)]
    if not mine:
        declared = ", ".join(sorted({s for s, _ in named}))[:300]
        raise stop(
            "rejected",
            f"the source is not an instance of the rule's declared source ({declared}): pred would "
            "reach the rule, if at all, through other rules",
            "wrong_source",
        )
    targets = sorted({t for _, t in mine})
    if len(targets) > 1:
        raise stop(
            "rejected",
            f"{name[:200]!r} names {len(targets)} rules from this source (to {', '.join(targets)[:300]}): "
            "name the target's variant as pred list --rules does",
            "unknown_rule",
        )
    return mine[0]


def _valid(
    source: dict[str, Any], evidence: dict[str, Any], details: dict[str, Any]
) -> Generator[PredCall, PredResult, Value]:
    """The source's optimum by brute force: pred alone, no rule (its ILP solver would reduce the
    instance, perhaps by this very rule)."""
    files = {"source.json": source}
    solved = yield PredCall(("solve", "source.json", *BRUTE), files)
    if solved.failure == "timeout":
        raise stop(
            "inconclusive",
            "pred solve --solver brute-force (source) timed out: the instance's validity is not shown",
            "timeout",
            **details,
        )
    if not solved.failure and solved.returncode == 1:
        raise stop(
            "rejected",
            "the source instance is not valid: pred does not solve it on its own "
            f"(pred solve --solver brute-force: {error_line(solved.stderr) or 'no message'})",
            "invalid_instance",
            **details,
        )
    if not solved.failure and solved.returncode != 0 and (found := panics(solved.stderr)):
        panic = found[-1]
        raise stop(
            "inconclusive",
            f"pred itself panics solving the source by brute force, at {panic.location}: {panic.message}",
            "pred_error",
            **details,
        )
    data = json_of(solved, "solve --solver brute-force (source)")
    optimum = value_of(data, "solve (source)")
    evidence["source_solve"] = {
        "solver": "brute-force",
        "evaluation": optimum.text,
        "solution": data.get("solution"),
    }
    return optimum
