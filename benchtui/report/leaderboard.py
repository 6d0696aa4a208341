"""Per-model results and pairwise comparisons, pooled over the runs of one campaign identity."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from decimal import Decimal
from itertools import combinations
from typing import Any

from benchtui.report import stats
from benchtui.report.logical import LogicalStats, has_logical, logical_stats
from benchtui.report.runs import RecordedRun, SessionHistory, sessions_by_model, total

CERTIFICATE_KINDS = ("confirmed", "rejected", "inconclusive", "unverified")
VERIFIER_STATUS = {"accepted": "confirmed", "rejected": "rejected", "inconclusive": "inconclusive"}


@dataclass(frozen=True, slots=True)
class ModelStats:
    model: str
    planned: int
    states: Counter[str]
    certificates: dict[str, int]
    verified_bugs: int
    rules: tuple[str, ...]
    bug_rate: stats.Rate
    spent_usd: Decimal
    wasted_usd: Decimal
    tokens: int
    wall_s: dict[str, float | None]
    logical: LogicalStats | None = None
    """Only when the runs have logical budgets (`[budget.per_session]`)."""

    @property
    def ran(self) -> int:
        return self.states["done"] + self.states["error"] + self.states["killed"]

    @property
    def usd_per_verified_bug(self) -> Decimal | None:
        return self.spent_usd / self.verified_bugs if self.verified_bugs else None

    def to_json(self) -> dict[str, Any]:
        per_bug = self.usd_per_verified_bug
        return {
            "model": self.model,
            "planned": self.planned,
            "ran": self.ran,
            **{
                s: self.states[s] for s in ("done", "skipped_budget", "error", "killed", "running", "pending")
            },
            "certificates": self.certificates,
            "verified_bugs": self.verified_bugs,
            "verified_rules": list(self.rules),
            "bug_rate": self.bug_rate.to_json(),
            "spent_usd": float(self.spent_usd),
            "wasted_usd": float(self.wasted_usd),
            "usd_per_verified_bug": round(float(per_bug), 9) if per_bug is not None else None,
            "tokens": self.tokens,
            "wall_s": self.wall_s,
            **({"logical": self.logical.to_json()} if self.logical is not None else {}),
        }


@dataclass(frozen=True, slots=True)
class Comparison:
    a: str
    b: str
    difference: float | None
    """Bug rate of a minus bug rate of b."""
    p_value: float | None

    @property
    def separable(self) -> bool:
        return self.p_value is not None and self.p_value < stats.ALPHA

    @property
    def verdict(self) -> str:
        if self.p_value is None or self.difference is None:
            return "no data: a model has no session that ran"
        if self.p_value >= stats.ALPHA:
            return f"the data cannot separate these two models (p = {self.p_value:.2g} ≥ {stats.ALPHA})"
        better, worse = (self.a, self.b) if self.difference > 0 else (self.b, self.a)
        return f"{better} finds bugs in more sessions than {worse} (p = {self.p_value:.2g})"

    def to_json(self) -> dict[str, Any]:
        return {
            "a": self.a,
            "b": self.b,
            "test": "fisher_exact",
            "difference": self.difference,
            "p_value": self.p_value,
            "separable": self.separable,
            "verdict": self.verdict,
        }


def certificate_kinds(view: SessionHistory) -> Counter[str]:
    """Each checked certificate by its verifier's verdict; a runner without a verifier (the
    fake) has its certificate counted confirmed only when it says `bug_found`."""
    checked = (view.verify_details or {}).get("checked")
    if isinstance(checked, list) and checked:
        return Counter(VERIFIER_STATUS.get(str(c.get("status")), "unverified") for c in checked)
    if view.certificate is None:
        return Counter()
    kind = {"bug_found": "confirmed", "rejected": "rejected"}.get(view.result or "", "unverified")
    return Counter([kind])


def found_bug(view: SessionHistory) -> bool:
    return view.ran and view.result == "bug_found"


def rule_of(view: SessionHistory) -> str:
    rule = (view.certificate or {}).get("rule")
    return rule if isinstance(rule, str) else view.planned.task or "library"


def model_stats(model: str, views: list[SessionHistory], runs: list[RecordedRun]) -> ModelStats:
    ran = [v for v in views if v.ran]
    certs: Counter[str] = Counter()
    for view in ran:
        certs.update(certificate_kinds(view))
    bug_sessions = [v for v in ran if found_bug(v)]
    rules = tuple(sorted({rule_of(v) for v in bug_sessions}))
    return ModelStats(
        model=model,
        planned=len(views),
        states=Counter(v.state for v in views),
        certificates={k: certs[k] for k in CERTIFICATE_KINDS},
        verified_bugs=len(rules),
        rules=rules,
        bug_rate=stats.rate(len(bug_sessions), len(ran)),
        spent_usd=total([run.spent.get(model, Decimal(0)) for run in runs]),
        wasted_usd=total([run.wasted.get(model, Decimal(0)) for run in runs]),
        tokens=sum(v.tokens for v in views),
        wall_s=stats.quantiles([w for v in ran if (w := v.wall_s) is not None]),
        logical=logical_stats(views, runs) if has_logical(runs) else None,
    )


def rank_key(m: ModelStats) -> tuple[float, float, float]:
    """The benchmark's order: verified distinct-rule bugs, then bug rate, then cost per bug."""
    per_bug = m.usd_per_verified_bug
    return (-m.verified_bugs, -(m.bug_rate.value or 0.0), float(per_bug) if per_bug else float("inf"))


def compare(a: ModelStats, b: ModelStats) -> Comparison:
    ra, rb = a.bug_rate, b.bug_rate
    difference = ra.value - rb.value if ra.value is not None and rb.value is not None else None
    return Comparison(a.model, b.model, difference, stats.fisher_p(ra.hits, ra.trials, rb.hits, rb.trials))


def leaderboard(runs: list[RecordedRun]) -> tuple[list[ModelStats], list[Comparison]]:
    grouped = sessions_by_model(runs)
    ranked = sorted((model_stats(m, views, runs) for m, views in grouped.items()), key=rank_key)
    return ranked, [compare(a, b) for a, b in combinations(ranked, 2)]
