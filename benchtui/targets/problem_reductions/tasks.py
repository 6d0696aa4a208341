"""Campaign tasks (problem-reductions' rule files) as pred sees them, and their canonical certificates.

A task is a file stem of `src/rules/` (`spinglass_maxcut`); pred names rules by their source and
target variants (`SpinGlass/SimpleGraph/i32 -> MaxCut/SimpleGraph/i32`, `pred list --rules`).
`rules.TASK_RULES` maps the stems benchtui's shipped campaign uses; `rule_of` also matches a stem
whose two halves are the lower-cased problem names of exactly one rule.
"""

from __future__ import annotations

import json
import subprocess
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .calls import Stop, error_line, rule_inventory
from .drivers import drive_sync, pred_environment
from .rules import TASK_RULES, problem
from .rules import rule_of as rule_of  # where callers have always found it


@dataclass(frozen=True, slots=True)
class PredRun:
    """A pred command run synchronously; `error` is set when it failed (one line)."""

    stdout: str = ""
    error: str = ""


def run_pred(pred: str, args: Iterable[str], *, timeout: float, cwd: str | None = None) -> PredRun:
    try:
        done = subprocess.run(
            [pred, *args],
            capture_output=True,
            text=True,
            timeout=timeout,
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            env=pred_environment(),
        )
    except subprocess.TimeoutExpired:
        return PredRun(error=f"timed out after {timeout:g} s")
    except OSError as exc:
        return PredRun(error=str(exc))
    if done.returncode != 0:
        return PredRun(error=error_line(done.stderr) or f"exit status {done.returncode}")
    return PredRun(stdout=done.stdout)


def rule_list(pred: str, *, timeout: float = 30.0) -> tuple[list[tuple[str, str]], str]:
    """(every (source, target) rule of this pred, "") or ([], the problem): `pred list --rules
    --json`, or where pred has no `--rules` (0.3.0) the edges of `pred export-graph`."""
    try:
        return drive_sync(rule_inventory(), pred=pred, timeout=timeout), ""
    except Stop as stopped:
        return [], stopped.verdict.reason


def canonical_certificate(
    rule: tuple[str, str], pred: str, *, timeout: float
) -> tuple[dict[str, Any] | None, str]:
    """A certificate of the rule's canonical example (`pred create --example SRC --to TGT`), as an
    agent would build it, or (None, the problem)."""
    source_spec, target_spec = rule
    created = run_pred(
        pred, ("create", "--example", source_spec, "--to", target_spec, "--json"), timeout=timeout
    )
    if created.error:
        return None, f"pred create --example: {created.error}"
    with tempfile.TemporaryDirectory(prefix="benchtui-task-") as tmp:
        (Path(tmp) / "source.json").write_text(created.stdout)
        reduced = run_pred(
            pred, ("reduce", "source.json", "--to", target_spec, "--json"), timeout=timeout, cwd=tmp
        )
    if reduced.error:
        return None, f"pred reduce: {reduced.error}"
    try:
        source, bundle = json.loads(created.stdout), json.loads(reduced.stdout)
    except ValueError:
        return None, "pred printed no JSON"
    return {
        "rule": f"{source_spec} -> {target_spec}",
        "violation": "unsound_extraction",
        "source": source,
        "bundle": bundle,
        "note": "the rule's canonical example (a preflight check: a correct rule is rejected)",
    }, ""


def _names(text: str) -> str:
    return "".join(ch for ch in text.lower() if ch.isalnum())


def on_task(cert: dict[str, Any], task: str) -> bool:
    """Whether a certificate is for the session's task: its rule, or its instance's (source type,
    target type), names the task (a `src/rules/` stem `a_b`, or the name `AToB`)."""
    task_names = TASK_RULES.get(task)
    wanted = {_names(task), _names(task.replace("_", "to"))}
    if task_names:
        wanted.add(_names(f"{problem(task_names[0])}to{problem(task_names[1])}"))
    if "->" in task:  # a shortlist episode's task: `SOURCE/variant -> TARGET/variant`
        left, right = (side.strip().split("/")[0] for side in task.split("->", 1))
        wanted.add(_names(f"{left}to{right}"))
    rule = cert.get("rule")
    forms = set()
    if isinstance(rule, str):
        forms.add(_names(rule))
        if "->" in rule:
            left, right = (side.strip().split("/")[0] for side in rule.split("->", 1))
            forms.add(_names(f"{left}to{right}"))
    source: dict[str, Any] = cert["source"] if isinstance(cert.get("source"), dict) else {}
    bundle: dict[str, Any] = cert["bundle"] if isinstance(cert.get("bundle"), dict) else {}
    target: dict[str, Any] = bundle["target"] if isinstance(bundle.get("target"), dict) else {}
    instance = _names(f"{source.get('type', '')}to{target.get('type', '')}")
    named = bool(forms & wanted)
    # The instance must be of the task too where it says (an agent cannot name the task's rule
    # over an instance of another one).
    return named and (not source.get("type") or not target.get("type") or instance in wanted)
