"""Submissions of the benchmark's Top50 runner (`submission.json`), built in code for tests.

Written here from the format (runner version 0.11.0 of CodingThrust/problem-reductions-benchmark
at 672b214), never copied from it: a run's envelope, the triage ledger, then one episode per
rule with the counters, pred calls, submits and observations its ledgers must agree on. What is
built is structurally valid for the benchmark's own `validate_top50_submission` (tests with its
checkout check that), so the same values drive our reader, our report and the real scorer.

`build(...)` takes per episode what matters to the report: an accepted certificate at which
submit attempt, pred calls made, generations used (10 = the cap hit), usage.
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

RUNNER_VERSION = "0.11.0"
TRIAGE_BUDGET = {
    "model_generations": 8,
    "shell_actions": 12,
    "max_output_chars": 10_000,
    "command_timeout_seconds": 300,
}
EPISODE_BUDGET = {
    "model_generations": 10,
    "shell_actions": 12,
    "pred_calls": 24,
    "solve_calls": 10,
    "submit_attempts": 2,
    "max_output_chars": 10_000,
    "pred_timeout_seconds": 300,
}
SAFETY = {"model_timeout_seconds": 300, "model_retries": 2}
INFERENCE = {"max_tokens": 8192, "timeout": 300, "num_retries": 2}
PUBLISHED_COMMIT = "aa2d1a10cffa434871d12a4d6f411147fb7e08a8"
PUBLISHED_PRED = "0.6.0"
PUBLISHED_PROMPT = "4694b1f0f4970554976a02fb3134e107eabac166f511f5d4d5ae1cb953fdbd67"
"""sha256 of agent_config.yaml at 672b214 (the test with the checkout checks it)."""


def rules(n: int = 50, prefix: str = "rule") -> list[str]:
    return [f"{prefix}_{i:02d}" for i in range(1, n + 1)]


@dataclass
class Plan:
    """What one episode did."""

    accepted: int | None = None
    """The submit attempt (1 or 2) that was accepted; None: no bug."""
    certificate: dict[str, Any] | None = None
    """The accepted certificate (default: a minimal one naming the rule)."""
    rejected: int = 0
    """Submits rejected (before the accepted one, or alone)."""
    pred_calls: int = 0
    """Charged pred calls (at most 13: the ledger's bound is shell_actions + 1)."""
    generations: int = 3
    usage: Mapping[str, int] = field(
        default_factory=lambda: {"input": 1000, "output": 100, "cache_read": 0, "cache_write": 0}
    )


class _Ids:
    def __init__(self, seed: str) -> None:
        self.seed, self.n = seed, 0

    def next(self) -> str:
        self.n += 1
        return hashlib.sha256(f"{self.seed}:{self.n}".encode()).hexdigest()[:32]


def _status(limit: int, used: int = 0) -> dict[str, int]:
    return {"used": used, "limit": limit, "remaining": limit - used}


def _pred_record(sequence: int, request_id: str, subcommand: str) -> dict[str, Any]:
    args = [subcommand, "instance.json", "--json"]
    observation = {
        "observation_id": f"pred-{request_id}",
        "kind": "pred",
        "command": "pred " + shlex.join(args),
        "raw_log": f"../observations/pred-{request_id}.log",
        "returncode": 0,
        "timed_out": False,
        "original_chars": 20,
        "original_lines": 1,
        "preview_chars": 20,
        "archive_chars": 20,
        "preview_compacted": False,
        "archive_truncated": False,
    }
    return {
        "sequence": sequence,
        "request_id": request_id,
        "args": args,
        "command": subcommand,
        "charged": True,
        "outcome": "completed",
        "returncode": 0,
        "observation": observation,
    }


def _episode(index: int, rule: str, hypothesis: str, plan: Plan, ids: _Ids) -> dict[str, Any]:
    pred = [
        _pred_record(n, ids.next(), "solve" if n % 2 else "reduce") for n in range(1, plan.pred_calls + 1)
    ]
    solves = sum(1 for p in pred if p["command"] == "solve")
    attempts: list[dict[str, Any]] = []
    for _ in range(plan.rejected):
        attempts.append({"attempt": len(attempts) + 1, "request_id": ids.next(), "accepted": False,
                         "rule": rule, "reason": "the round trip holds"})  # fmt: skip
    if plan.accepted is not None:
        assert plan.accepted == len(attempts) + 1, "the accepted attempt follows the rejected ones"
        cert = plan.certificate or {
            "rule": rule,
            "violation": "unsound_extraction",
            "source": {},
            "bundle": {},
        }
        attempts.append({"attempt": plan.accepted, "request_id": ids.next(), "accepted": True, "rule": rule,
                         "reason": "confirmed", "certificate": cert})  # fmt: skip
    accepted = plan.accepted is not None
    status = {
        "model_generations": _status(10, plan.generations),
        "shell_actions": _status(12),
        "pred_calls": _status(24, plan.pred_calls),
        "solve_calls": _status(10, solves),
        "submit_attempts": {
            "used": len(attempts),
            "limit": 2,
            "remaining": 0 if accepted else 2 - len(attempts),
        },
    }
    return {
        "index": index,
        "rule": rule,
        "hypothesis": hypothesis,
        "status": "bug_found" if accepted else "completed",
        "accepted_submit_attempt": plan.accepted,
        "ledger": {
            "rule": rule,
            "budget": dict(EPISODE_BUDGET),
            "status": status,
            "pred": pred,
            "submit": attempts,
            "model_generations": [{"charged": True, "outcome": "completed"} for _ in range(plan.generations)],
            "shell_actions": [],
            "observations": [p["observation"] for p in pred],
        },
        "messages": [],
        "tokens_k": round(sum(plan.usage.values()) / 1000, 2),
        "usage": dict(plan.usage),
    }


def build(
    model: str = "vendor/model-a",
    plans: Mapping[int, Plan] | None = None,
    *,
    shortlist: list[str] | None = None,
    episodes: int = 50,
    library_commit: str = PUBLISHED_COMMIT,
    pred_version: str = PUBLISHED_PRED,
    prompt: str | None = None,
    rankable: bool = True,
    run_error: str | None = None,
    runner_version: str = RUNNER_VERSION,
    triage_usage: Mapping[str, int] | None = None,
    seed: str = "",
) -> dict[str, Any]:
    """A submission: `plans` by 1-based position (the rest: no bug, 3 generations); `episodes`
    fewer than 50 with `run_error` makes a cut-off run (a checkpoint: 'run incomplete after
    episode k/50'). `seed` makes the request ids of two runs differ."""
    rules_ = shortlist or rules()
    plans = plans or {}
    ids = _Ids(f"{model}:{seed}")
    short = [{"rule": r, "hypothesis": f"risk of {r}"} for r in rules_]
    triage_status = {
        "model_generations": _status(8, 2),
        "shell_actions": _status(12),
        "pred_calls": _status(0),
        "solve_calls": _status(0),
    }
    events: list[dict[str, Any]] = [
        {"sequence": n, "type": "model_generation", "charged": True, "outcome": "completed"} for n in (1, 2)
    ]
    events.append({"type": "shortlist_commit", "accepted": True, "rules": list(rules_)})
    eps = [
        _episode(i, r, f"risk of {r}", plans.get(i, Plan()), ids) for i, r in enumerate(rules_[:episodes], 1)
    ]
    if run_error is None and episodes < len(rules_):
        run_error = f"run incomplete after episode {episodes}/{len(rules_)}"
    sub: dict[str, Any] = {
        "model": model,
        "status": "run_error" if run_error else "completed",
        "rankable": rankable and not run_error,
        "shortlist": short,
        "triage": {
            "ledger": {
                "budget": dict(TRIAGE_BUDGET),
                "status": triage_status,
                "observations": [],
                "events": events,
                "shortlist": short,
            },  # fmt: skip
            "messages": [],
            "tokens_k": 2.2,
            "usage": dict(triage_usage or {"input": 2000, "output": 200, "cache_read": 0, "cache_write": 0}),
        },
        "episodes": eps,
        "library_commit": library_commit,
        "runner_version": runner_version,
        "pred_version": pred_version,
        "prompt_id": prompt or PUBLISHED_PROMPT,
        "safety_controls": dict(SAFETY),
        "created_at": "2026-12-03T12:00:00+00:00",
        "inference_parameters": dict(INFERENCE),
    }
    if run_error:
        sub["run_error"] = run_error
    return sub


def dumps(sub: Mapping[str, Any]) -> bytes:
    """As the runner writes it (json.dumps, indent 2)."""
    return json.dumps(sub, indent=2).encode()


# --- the benchmark's checkout (the real scorer), found through BENCHTUI_BENCHMARK_CHECKOUT -----

VARIABLE = "BENCHTUI_BENCHMARK_CHECKOUT"


def checkout() -> Path | None:
    """The benchmark's checkout (a work tree of CodingThrust/problem-reductions-benchmark, e.g.
    672b214) named by BENCHTUI_BENCHMARK_CHECKOUT, or None."""
    named = os.environ.get(VARIABLE)
    if not named:
        return None
    path = Path(named)
    return path if (path / "benchmark" / "top50_contract.py").is_file() else None


def need_checkout() -> Path:
    import pytest

    found = checkout()
    if found is None:
        pytest.skip(
            f"the benchmark's checkout is not here: set {VARIABLE} to a work tree of "
            "CodingThrust/problem-reductions-benchmark (672b214) to run its scorer on our output"
        )
    return found
