"""Pooling runs of different campaigns: what must be equal for their sessions to be comparable.

Runs of different campaigns (other models, other months) pool when every session was given the
same: the target (its environment fingerprint: the library's commit and the tools it names;
the `[target]` table; the target's programs, pred's version and sha256, where recorded), the
prompt of each task, each session's money and logical budgets, the runner profile (its kind and
content, the action format among it), the protocol (and a shortlist's rule inventory), and a
model's own table where two runs share a model. Anything else (which models, how many, when,
the total money) may differ. Each difference is one line naming it and the runs; the report
refuses to pool with any, unless asked to anyway, and then each is a finding of the audit.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from benchtui.core import registry
from benchtui.core.money import fmt_exact
from benchtui.report.runs import RecordedRun


@dataclass(frozen=True, slots=True)
class Pooling:
    differences: list[str]
    """What differs between the runs (empty: they pool)."""
    notes: list[str]
    """What could not be compared (not recorded by an older run), and quick trials among them."""


def pooling(runs: list[RecordedRun]) -> Pooling:
    """The differences between the first run and each other one (each named once), and notes."""
    differences: list[str] = []
    notes: list[str] = []
    first = runs[0]
    for other in runs[1:]:
        for what, get, shown in PARTS:
            a, b = get(first), get(other)
            if a != b:
                differences.append(f"{what}: {_difference(a, b, shown)} ({first.path} vs {other.path})")
        differences += _target_and_programs(first, other, notes)
        differences += _models(first, other)
    differences += _prompts(runs)
    for run in runs:
        if run.record.trial is not None:
            notes.append(
                f"{run.path} is a quick trial ({run.record.trial.describe()}) of campaign {run.campaign.name}"
            )
    return Pooling(list(dict.fromkeys(differences)), list(dict.fromkeys(notes)))


def refusal(runs: list[RecordedRun], differences: list[str]) -> str:
    """The one line that refuses to pool."""
    shown = "; ".join(differences[:3]) + (
        f"; and {len(differences) - 3} more" if len(differences) > 3 else ""
    )
    names = " and ".join(str(run.path) for run in runs[:2]) + (" …" if len(runs) > 2 else "")
    return (
        f"cannot pool {names}: their sessions were not given the same: {shown} "
        "(--pool-anyway pools them, each difference a finding of the audit)"
    )


def _fingerprint(run: RecordedRun) -> str:
    """The environment fingerprint its sessions ran on: as the run recorded it, else as its
    sessions did, else its identity's hash of it (what equality is decided on)."""
    start = run.record.history[0].fingerprint if run.record.history else ""
    seen = Counter(v.environment for v in run.sessions if v.environment)
    return start or (seen.most_common(1)[0][0] if seen else f"(hash {run.identity.get('environment')})")


def _target(run: RecordedRun) -> tuple[str | None, str | None]:
    return run.identity.get("environment"), run.identity.get("target")


def _money(run: RecordedRun) -> tuple[str, bool]:
    return fmt_exact(run.campaign.per_session_usd), run.campaign.budget.enforce


def _logical(run: RecordedRun) -> dict[str, Any]:
    limits = run.campaign.budget.per_session
    protocol = run.campaign.protocol
    return {
        **(limits.model_dump(mode="json", exclude_defaults=True) if limits else {}),
        **({"triage": protocol.triage.model_dump(mode="json")} if protocol else {}),
    }


def _profiles(run: RecordedRun) -> list[dict[str, Any]]:
    """The runner profiles its sessions ran under (the active one if none ran), by content."""
    used = {v.runner for v in run.sessions if v.runner and v.runner in run.campaign.runners}
    names = sorted(used) or [run.campaign.runner]
    return sorted(
        (
            {**p.model_dump(mode="json"), "kind": registry.identity_spelling(p.kind)}
            for p in (run.campaign.runners[n] for n in names)
        ),
        key=lambda d: json.dumps(d, sort_keys=True),
    )


def _kinds(run: RecordedRun) -> list[str]:
    return sorted({p["kind"] for p in _profiles(run)})


def _action_formats(run: RecordedRun) -> list[str]:
    return sorted({str(p["action_format"]) for p in _profiles(run) if "action_format" in p})


def _contents(run: RecordedRun) -> list[dict[str, Any]]:
    """The profiles but what the parts above compare (their kind, their action format)."""
    return [{k: v for k, v in p.items() if k not in ("kind", "action_format")} for p in _profiles(run)]


def _protocol(run: RecordedRun) -> tuple[str | None, str | None]:
    return run.identity.get("protocol"), run.identity.get("inventory")


def _plain(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str)


def _difference(a: Any, b: Any, shown: Callable[[Any], str]) -> str:
    """`model_calls 3 vs 5`: only the keys that differ, where both are one table (a profile)."""
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b) == 1 and isinstance(a[0], dict):
        a, b = a[0], b[0]
    if isinstance(a, dict) and isinstance(b, dict):
        keys = [k for k in dict.fromkeys([*a, *b]) if a.get(k) != b.get(k)]
        return ", ".join(f"{k} {_plain(a.get(k))} vs {_plain(b.get(k))}" for k in keys)
    return f"{shown(a)} vs {shown(b)}"


PARTS: list[tuple[str, Callable[[RecordedRun], Any], Callable[[Any], str]]] = [
    ("per-session money", _money, lambda v: f"{v[0]}{'' if v[1] else ' (not enforced)'}"),
    ("logical budgets", _logical, _plain),
    ("runner kind", _kinds, ", ".join),
    ("action format", _action_formats, lambda v: ", ".join(v) or "none"),
    ("runner profile", _contents, _plain),
    ("protocol", _protocol, lambda v: f"protocol {v[0] or 'none'}, inventory {v[1] or 'none'}"),
]
"""(what, the run's value of it, how to show it): equal values pool."""


def _target_and_programs(a: RecordedRun, b: RecordedRun, notes: list[str]) -> list[str]:
    """The target (its fingerprint, its `[target]` table) and its programs: pred's version and
    sha256, where both runs recorded them."""
    pa, pb = a.record.programs, b.record.programs
    out = []
    if _target(a) != _target(b):  # by the identity's hash of it: the same for runs of every release
        out.append(f"target fingerprint: {_fingerprint(a)} ({a.path}) vs {_fingerprint(b)} ({b.path})")
    for name in sorted(pa.keys() | pb.keys()):
        if name in pa and name in pb:
            if pa[name] != pb[name]:
                out.append(f"{name}: {pa[name]} ({a.path}) vs {pb[name]} ({b.path})")
        else:
            missing = b if name in pa else a
            notes.append(
                f"{name}: not recorded by {missing.path} (made before runs recorded it, or its runner does "
                f"not use the target): compared by the environment fingerprint alone"
            )
    return out


def _models(a: RecordedRun, b: RecordedRun) -> list[str]:
    """A model both runs have must be the same model: its prices and limits (what its sessions
    could buy with their money) as well as its name."""
    theirs = {m.name: m for m in b.campaign.models}
    out = []
    for model in a.campaign.models:
        other = theirs.get(model.name)
        if other is None:
            continue
        x, y = model.model_dump(exclude={"max_connections"}), other.model_dump(exclude={"max_connections"})
        keys = [k for k in x if x[k] != y[k]]
        if keys:
            detail = ", ".join(f"{k} {x[k]} vs {y[k]}" for k in keys)
            out.append(f"model {model.name}: {detail} ({a.path} vs {b.path})")
    return out


def _prompts(runs: list[RecordedRun]) -> list[str]:
    """Each task's prompt, the same in every run that recorded one for it."""
    seen: dict[str, dict[str, set[str]]] = {}
    for run in runs:
        for view in run.sessions:
            if view.prompt_sha256:
                seen.setdefault(view.planned.task or "", {}).setdefault(view.prompt_sha256, set()).add(
                    str(run.path)
                )
    out = []
    for task, hashes in seen.items():
        if len(hashes) > 1 and len({p for paths in hashes.values() for p in paths}) > 1:
            detail = ", ".join(f"{h[:12]} ({', '.join(sorted(p))})" for h, p in sorted(hashes.items()))
            out.append(f"prompt of task {task or '(whole library)'}: {detail}")
    return out
