"""Per-model results and pairwise comparisons, pooled over the runs given (repeated runs of a model
are more trials of it, never a best-of pick)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field, replace
from decimal import Decimal
from itertools import combinations
from typing import Any

from benchtui.core import endings as why
from benchtui.core import registry
from benchtui.core.target import JudgedBy
from benchtui.core.usage import BUCKETS
from benchtui.engine.counting import Counted, basis, distinct_bug_rules, judged_by
from benchtui.report import stats
from benchtui.report.logical import LogicalStats, has_logical, logical_stats
from benchtui.report.runs import RecordedRun, SessionHistory, sessions_by_model, total

CERTIFICATE_KINDS = ("confirmed", "claimed", "rejected", "off_task", "inconclusive", "unverified")
"""confirmed: a verifier accepted it; claimed: a runner without a verifier says it is a bug (fake,
demo); off_task: accepted, but for another rule than its session's task (never counted)."""
VERIFIER_STATUS = {
    "accepted": "confirmed",
    "rejected": "rejected",
    "inconclusive": "inconclusive",
    "off_task": "off_task",
}


@dataclass(frozen=True, slots=True)
class ModelStats:
    model: str
    planned: int
    states: Counter[str]
    certificates: dict[str, int]
    verified_bugs: int
    rules: tuple[str, ...]
    """The distinct rules the ranking counts (verified, or claimed where no verifier judged)."""
    bug_rate: stats.Rate
    """Over trials: sessions that ran and got a model answer, without an infrastructure error."""
    spent_usd: Decimal
    wasted_usd: Decimal
    tokens: int
    wall_s: dict[str, float | None]
    logical: LogicalStats | None = None
    """Only when the runs have logical budgets (`[budget.per_session]`)."""
    bugs: int = 0
    """Distinct-rule bugs whoever judged them (verifier or the runner's own claim)."""
    judged_by: JudgedBy = "verifier"
    """Who judged the bugs counted in `rules`: the verifier, or only the runner (claimed)."""
    infra_errors: int = 0
    """Sessions that ran but are not trials (an infrastructure error, or no model answer at all)."""
    endings: Counter[str] = field(default_factory=Counter)
    """Why its sessions that ran ended (their last attempt), by ending (core/endings.py)."""
    could_not_act: int = 0
    """Sessions that ended without a single executed action, for a reason that says the model
    could not act (no tool call, empty answers, over its context window on its first call)."""
    usage: dict[str, int] = field(default_factory=dict)
    """`tokens` by bucket (core/usage.py BUCKETS; empty for runs written before buckets)."""

    @property
    def ran(self) -> int:
        return self.states["done"] + self.states["error"] + self.states["killed"]

    @property
    def not_hunting(self) -> int:
        """Sessions the model ended without hunting (format errors, empty answers, context window,
        an agent that failed): its doing, counted as trials, shown beside the bug rate."""
        return sum(self.endings[e] for e in why.NOT_HUNTING)

    @property
    def cannot_act(self) -> bool:
        """Most of its sessions (that ended by the model's doing) could not act: the leaderboard
        marks the row, the audit says why and what to fix."""
        own = self.ran - self.infra_errors
        return self.could_not_act > 0 and 2 * self.could_not_act > own

    @property
    def usd_per_bug(self) -> Decimal | None:
        """Per counted bug (verified ones; claimed ones where the runner has no verifier); None
        without a bug."""
        return self.spent_usd / len(self.rules) if self.rules else None

    @property
    def usd_per_verified_bug(self) -> Decimal | None:
        """Per bug a verifier confirmed; None without one (a claim is never a verified bug)."""
        return self.spent_usd / self.verified_bugs if self.verified_bugs else None

    def to_json(self) -> dict[str, Any]:
        per_bug, per_verified = self.usd_per_bug, self.usd_per_verified_bug
        return {
            "model": self.model,
            "planned": self.planned,
            "ran": self.ran,
            **{
                s: self.states[s] for s in ("done", "skipped_budget", "error", "killed", "running", "pending")
            },
            "certificates": self.certificates,
            "verified_bugs": self.verified_bugs,
            "bugs": self.bugs,
            "judged_by": self.judged_by,
            "verified_rules": list(self.rules) if self.judged_by == "verifier" else [],
            "bug_rules": list(self.rules),
            "infra_errors": self.infra_errors,
            "bug_rate": self.bug_rate.to_json(),
            "not_hunting": self.not_hunting,
            "endings": {e: self.endings[e] for e in why.ENDINGS},
            "could_not_act": self.could_not_act,
            "cannot_act": self.cannot_act,
            "spent_usd": float(self.spent_usd),
            "wasted_usd": float(self.wasted_usd),
            "usd_per_bug": round(float(per_bug), 9) if per_bug is not None else None,
            "usd_per_verified_bug": round(float(per_verified), 9) if per_verified is not None else None,
            "tokens": self.tokens,
            "usage": dict(self.usage),
            "wall_s": self.wall_s,
            **({"logical": self.logical.to_json()} if self.logical is not None else {}),
        }


@dataclass(frozen=True, slots=True)
class Comparison:
    a: str
    b: str
    difference: float | None
    """Bug rate of a minus bug rate of b (over the pairs for McNemar, over trials for Fisher)."""
    p_value: float | None
    test: str = "fisher_exact"
    """`mcnemar_exact` (paired by task × repeat) or `fisher_exact` (unpaired)."""
    p_adjusted: float | None = None
    """Holm-adjusted over all the pairs of the report; what `separable` uses."""
    pairs: int = 0
    discordant: tuple[int, int] = (0, 0)
    """McNemar: (pairs where only a found a bug, pairs where only b did)."""

    @property
    def separable(self) -> bool:
        p = self.p_adjusted if self.p_adjusted is not None else self.p_value
        return p is not None and p < stats.ALPHA

    @property
    def verdict(self) -> str:
        p = self.p_adjusted if self.p_adjusted is not None else self.p_value
        if p is None or self.difference is None:
            return "no data: a model has no trial"
        shown = f"p = {self.p_value:.2g}, Holm-adjusted {p:.2g}"
        if not self.separable:
            return f"the data cannot separate these two models ({shown} ≥ {stats.ALPHA})"
        better, worse = (self.a, self.b) if self.difference > 0 else (self.b, self.a)
        return f"{better} finds bugs in more sessions than {worse} ({shown})"

    def to_json(self) -> dict[str, Any]:
        return {
            "a": self.a,
            "b": self.b,
            "test": self.test,
            "difference": self.difference,
            "p_value": self.p_value,
            "p_adjusted": self.p_adjusted,
            **(
                {"pairs": self.pairs, "discordant": list(self.discordant)}
                if self.test == "mcnemar_exact"
                else {}
            ),
            "separable": self.separable,
            "verdict": self.verdict,
        }


def certificate_kinds(view: SessionHistory) -> Counter[str]:
    """Each checked certificate by its verifier's verdict; a runner without a verifier (fake,
    demo) has its certificate counted `claimed` when it says `bug_found`, never confirmed."""
    checked = view.judgement.checked if view.judgement else ()
    if checked:
        return Counter(
            "off_task" if c.off_task else VERIFIER_STATUS.get(c.status, "unverified") for c in checked
        )
    if view.certificate is None:
        return Counter()
    verified = judged_by(view.judgement) == "verifier"
    found = "confirmed" if verified else "claimed"
    kind = {"bug_found": found, "rejected": "rejected"}.get(view.result or "", "unverified")
    return Counter([kind])


def counted(view: SessionHistory) -> Counted:
    return Counted(view.result if view.ran else None, view.planned.task, view.certificate, view.judgement)


def is_trial(view: SessionHistory) -> bool:
    """A session that ran and could have found a bug: not an infrastructure error, and not one
    that ended (error, killed) before any model answer (no tokens, no certificate)."""
    if not view.ran or view.infra_error:
        return False
    return not (view.state in ("error", "killed") and view.tokens == 0 and view.certificate is None)


def found_bug(view: SessionHistory) -> bool:
    return view.ran and view.result == "bug_found"


def rule_of(view: SessionHistory) -> str:
    rule = (view.certificate or {}).get("rule")
    return rule if isinstance(rule, str) else view.planned.task or "library"


def model_stats(
    model: str, views: list[SessionHistory], runs: list[RecordedRun], by: JudgedBy | None = None
) -> ModelStats:
    """One model's numbers; `by` is what the campaign's ranking counts (default: this model's)."""
    ran = [v for v in views if v.ran]
    certs: Counter[str] = Counter()
    for view in ran:
        certs.update(certificate_kinds(view))
    sessions = [counted(v) for v in ran]
    by = by or basis(sessions)
    rules = distinct_bug_rules(sessions, by=by)
    trials = [v for v in ran if is_trial(v)]
    ended = [v.ending for v in ran if v.ending is not None]
    return ModelStats(
        model=model,
        planned=len(views),
        states=Counter(v.state for v in views),
        certificates={k: certs[k] for k in CERTIFICATE_KINDS},
        verified_bugs=len(distinct_bug_rules(sessions, by="verifier")),
        rules=rules,
        bug_rate=stats.rate(sum(found_bug(v) for v in trials), len(trials)),
        bugs=len(distinct_bug_rules(sessions, by=None)),
        judged_by=by,
        infra_errors=len(ran) - len(trials),
        spent_usd=total([run.spent.get(model, Decimal(0)) for run in runs]),
        wasted_usd=total([run.wasted.get(model, Decimal(0)) for run in runs]),
        tokens=sum(v.tokens for v in views),
        wall_s=stats.quantiles([w for v in ran if (w := v.wall_s) is not None]),
        logical=logical_stats(views, runs) if has_logical(runs) else None,
        endings=Counter(e.name for e in ended),
        could_not_act=sum(e.could_not_act for e in ended),
        usage=usage_of(views),
    )


def usage_of(views: list[SessionHistory]) -> dict[str, int]:
    """Sessions' tokens by bucket, summed (every bucket named once any session has one)."""
    total: dict[str, int] = {}
    for view in views:
        for bucket, count in view.usage.items():
            total[bucket] = total.get(bucket, 0) + count
    return {b: total.get(b, 0) for b in BUCKETS} if total else {}


def ranked_bugs(m: ModelStats) -> int:
    """The count the ranking uses: verified bugs, or the runner's claims where none has a verifier."""
    return len(m.rules)


def rank_key(m: ModelStats) -> tuple[float, float, float]:
    """The benchmark's order: verified distinct-rule bugs (claimed ones for runners without a
    verifier), then bug rate, then cost per bug."""
    per_bug = m.usd_per_bug
    return (-ranked_bugs(m), -(m.bug_rate.value or 0.0), float(per_bug) if per_bug else float("inf"))


def compare(a: ModelStats, b: ModelStats) -> Comparison:
    """Fisher's exact test on the two models' trials (unpaired)."""
    ra, rb = a.bug_rate, b.bug_rate
    difference = ra.value - rb.value if ra.value is not None and rb.value is not None else None
    return Comparison(a.model, b.model, difference, stats.fisher_p(ra.hits, ra.trials, rb.hits, rb.trials))


PairKey = tuple[str, int]
"""(task, k): a model's k-th session of the task, over its pooled runs in order (in one run: the
task's repeat), so models pair on the tasks both ran, in runs of one campaign or of several."""


def trial_outcomes(views: list[SessionHistory]) -> dict[PairKey, bool]:
    """Per trial, whether it found a bug."""
    seen: Counter[str] = Counter()
    out: dict[PairKey, bool] = {}
    for v in views:
        task = v.planned.task or ""
        k, seen[task] = seen[task], seen[task] + 1
        if is_trial(v):
            out[task, k] = found_bug(v)
    return out


def compare_paired(a: str, b: str, hits_a: dict[PairKey, bool], hits_b: dict[PairKey, bool]) -> Comparison:
    """The exact McNemar test on the task pairs both models ran (a binomial test of the discordant
    pairs, one way against the other, at 1/2)."""
    keys = sorted(hits_a.keys() & hits_b.keys())
    only_a = sum(hits_a[k] and not hits_b[k] for k in keys)
    only_b = sum(hits_b[k] and not hits_a[k] for k in keys)
    difference = (only_a - only_b) / len(keys) if keys else None
    p = stats.mcnemar_exact_p(only_a, only_b) if keys else None
    return Comparison(a, b, difference, p, "mcnemar_exact", None, len(keys), (only_a, only_b))


def shared_ranks(ranked: list[ModelStats], comparisons: list[Comparison]) -> list[int]:
    """Each model's rank: 1 + the models the data shows are better (Holm-adjusted); models the data
    cannot separate share a rank."""
    better: dict[str, int] = {m.model: 0 for m in ranked}
    for c in comparisons:
        if c.separable and c.difference is not None and c.difference != 0:
            worse = c.b if c.difference > 0 else c.a
            better[worse] += 1
    ranks = [1 + better[m.model] for m in ranked]
    # Keep the order monotone: a model listed lower never gets a better rank than one above it.
    for i in range(1, len(ranks)):
        ranks[i] = max(ranks[i], ranks[i - 1])
    return ranks


MATRIX_CELLS = ("bug", "rejected", "no_certificate", "error")


def cell_of(views: list[SessionHistory]) -> str | None:
    """A task × model cell over its sessions (repeats, pooled runs): the best outcome any had."""
    seen = set()
    for v in views:
        if not v.ran:
            continue
        if not is_trial(v) or v.state != "done":
            seen.add("error")
        elif found_bug(v):
            seen.add("bug")
        elif v.certificate is not None or v.result == "rejected":
            seen.add("rejected")
        else:
            seen.add("no_certificate")
    return next((c for c in MATRIX_CELLS if c in seen), None)


def task_matrix(runs: list[RecordedRun], models: list[str]) -> dict[str, Any] | None:
    """`{"tasks": [...], "cells": {model: [cell per task]}}` for campaigns with tasks (else None);
    a cell is bug, rejected, no_certificate, error, or null where no session of it ran."""
    if not all(run.campaign.tasks for run in runs):
        return None
    tasks = list(dict.fromkeys(task for run in runs for task in run.campaign.tasks or []))
    grouped = sessions_by_model(runs)
    cells = {
        model: [cell_of([v for v in grouped[model] if v.planned.task == task]) for task in tasks]
        for model in models
    }
    return {"tasks": tasks, "cells": cells}


def has_verifier(runs: list[RecordedRun]) -> bool:
    """Whether a verifier judged (or would have judged) these runs' certificates: a runner kind
    that hands them to the target, and a target that verifies (mini-swe-agent, command on
    problem-reductions), even when no certificate came; fake and demo claim, never verify."""
    for run in runs:
        campaign = run.campaign
        used = {v.runner for v in run.sessions if v.ran and v.runner in campaign.runners} or {campaign.runner}
        verifies = registry.target_class(campaign.target.kind).verifies
        if verifies and any(campaign.kind(name).uses_target for name in used):
            return True
    return False


def leaderboard(runs: list[RecordedRun]) -> tuple[list[ModelStats], list[Comparison]]:
    grouped = sessions_by_model(runs)
    judged = basis([counted(v) for views in grouped.values() for v in views if v.ran])
    by: JudgedBy = "verifier" if has_verifier(runs) else judged
    ranked = sorted((model_stats(m, views, runs, by) for m, views in grouped.items()), key=rank_key)
    paired = all(run.campaign.tasks for run in runs)
    outcomes = {m: trial_outcomes(views) for m, views in grouped.items()}
    comparisons = []
    for a, b in combinations(ranked, 2):
        common = outcomes[a.model].keys() & outcomes[b.model].keys()
        if paired and common:
            comparisons.append(compare_paired(a.model, b.model, outcomes[a.model], outcomes[b.model]))
        else:
            comparisons.append(compare(a, b))
    adjusted = stats.holm([c.p_value for c in comparisons])
    return ranked, [replace(c, p_adjusted=p) for c, p in zip(comparisons, adjusted, strict=True)]
