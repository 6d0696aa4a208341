"""The fairness audit: from the journal and the outcome details alone, did every model get the same
environment, prompt, budget (money and logical limits) and runner, and did skips and outages hit
the models alike? (Sessions ended by a logical limit vs by submitting are shown per model: that
is the model's behaviour, not a difference in what it was given.)

Each check that fails is a finding: one line that starts with what was checked and names what
differs. The comparison is `fair` only when there is no finding.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from benchtui.core.endings import CAUSE_WORDS, MEANING, fix
from benchtui.engine.campaign import Model
from benchtui.report import evidence
from benchtui.report.findings import share_gap, spread
from benchtui.report.leaderboard import is_trial
from benchtui.report.logical import LogicalAudit, has_logical, logical_audit
from benchtui.report.runs import RecordedRun, SessionHistory, models_of, sessions_by_model


@dataclass(frozen=True, slots=True)
class ModelAudit:
    model: Model
    planned: int
    environments: Counter[str]
    prompts: Counter[str]
    reservations: Counter[str]
    runners: Counter[str]
    skipped_budget: int
    infra_errors: int
    logical: LogicalAudit | None = None
    """Only when the runs have logical budgets (`[budget.per_session]`)."""
    task_prompts: dict[str, Counter[str]] = field(default_factory=dict)
    """Per task ("" without tasks), how many sessions got each prompt hash."""
    tasks_ran: frozenset[tuple[str, int]] = frozenset()
    """(run, session index) of the sessions that started: the tasks × repeats it was compared on."""
    throttled: int = 0
    """429 answers its provider gave its sessions."""
    throttle_wait_s: float = 0.0
    """Seconds its sessions waited for their provider's backoff after those 429s."""
    throttled_sessions: int = 0
    span: tuple[float, float] | None = None
    """When its sessions ran: the first and the last journal line of it, over the pooled runs."""
    joined: tuple[str, ...] = ()
    """Per run it joined by an extension (`--resume` with it added): when, and the run."""

    def dates(self) -> dict[str, str] | None:
        """The span of dates its sessions ran in (ISO 8601, UTC)."""
        if self.span is None:
            return None
        return {"first": iso(self.span[0]), "last": iso(self.span[1])}

    def prompt_summary(self) -> dict[str, Any]:
        """The prompts in three numbers (hashes are not listed: one per task)."""
        return {
            "tasks": len(self.task_prompts),
            "distinct": len(set().union(*self.task_prompts.values())) if self.task_prompts else 0,
            "sessions": sum(sum(c.values()) for c in self.task_prompts.values()),
            "tasks_with_several": sum(len(c) > 1 for c in self.task_prompts.values()),
        }

    def share(self, count: int) -> float:
        return count / self.planned if self.planned else 0.0

    def to_json(self) -> dict[str, Any]:
        m = self.model
        return {
            "model": m.name,
            "environments": dict(self.environments),
            "prompts": self.prompt_summary(),
            "reserved_usd": dict(self.reservations),
            "runners": dict(self.runners),
            "skipped_budget": {"sessions": self.skipped_budget, "share": self.share(self.skipped_budget)},
            "infra_errors": {"sessions": self.infra_errors, "share": self.share(self.infra_errors)},
            "input_usd_per_mtok": float(m.input_usd_per_mtok),
            "output_usd_per_mtok": float(m.output_usd_per_mtok),
            "cache_read_usd_per_mtok": float(m.spec().cache_read_price),
            "cache_write_usd_per_mtok": float(m.spec().cache_write_price),
            "max_output_tokens": m.max_output_tokens,
            "throttled": {
                "answers": self.throttled,
                "sessions": self.throttled_sessions,
                "wait_s": round(self.throttle_wait_s, 3),
            },
            "dates": self.dates(),
            "joined": list(self.joined),
            **({"logical": self.logical.to_json()} if self.logical is not None else {}),
        }


@dataclass(frozen=True, slots=True)
class Audit:
    models: list[ModelAudit]
    findings: list[str]
    notes: list[str] = field(default_factory=list)
    """What a reader should know that does not make the comparison unequal (never a finding)."""

    @property
    def fair(self) -> bool:
        return not self.findings

    @property
    def verdict(self) -> str:
        return "fair: no finding" if self.fair else f"UNFAIR: {len(self.findings)} finding(s)"

    def to_json(self) -> dict[str, Any]:
        return {
            "fair": self.fair,
            "findings": self.findings,
            "notes": self.notes,
            "models": [m.to_json() for m in self.models],
        }


def iso(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _span(model: str, runs: list[RecordedRun]) -> tuple[float, float] | None:
    spans = [run.spans[model] for run in runs if model in run.spans]
    return (min(s[0] for s in spans), max(s[1] for s in spans)) if spans else None


def _joined(model: str, runs: list[RecordedRun]) -> tuple[str, ...]:
    """`2026-02-03T09:00:00Z (runs/month)`: where an extension added the model to a run."""
    return tuple(
        f"{entry.at} ({run.path})" for run in runs if (entry := run.record.joined(model)) is not None
    )


def _model_audit(model: Model, views: list[SessionHistory], runs: list[RecordedRun]) -> ModelAudit:
    started = [v for v in views if v.ran or v.state == "running"]
    return ModelAudit(
        span=_span(model.name, runs),
        joined=_joined(model.name, runs),
        model=model,
        planned=len(views),
        environments=Counter(v.environment or "(not recorded)" for v in started),
        prompts=Counter(v.prompt_sha256 for v in started if v.prompt_sha256),
        reservations=Counter(
            str(v.reserved_usd.normalize()) if v.reserved_usd is not None else "(not recorded)"
            for v in started
        ),
        runners=Counter(v.runner or "(not recorded)" for v in started),
        skipped_budget=sum(v.state == "skipped_budget" for v in views),
        infra_errors=sum(not is_trial(v) for v in views if v.ran),
        logical=logical_audit(started, runs) if has_logical(runs) else None,
        task_prompts=_task_prompts(started),
        tasks_ran=frozenset((v.run, v.planned.index) for v in started),
        throttled=sum(v.throttled for v in views),
        throttle_wait_s=sum(v.throttle_wait_s for v in views),
        throttled_sessions=sum(bool(v.throttled or v.throttle_wait_s) for v in views),
    )


def _task_prompts(views: list[SessionHistory]) -> dict[str, Counter[str]]:
    prompts: dict[str, Counter[str]] = {}
    for v in views:
        if v.prompt_sha256:
            prompts.setdefault(v.planned.task or "", Counter())[v.prompt_sha256] += 1
    return prompts


def _prompts(audits: list[ModelAudit]) -> list[str]:
    """Every model got the identical prompt for the same task (each task has its own prompt):
    one finding naming the tasks whose sessions saw more than one prompt, hashes summarised."""
    tasks = dict.fromkeys(t for a in audits for t in a.task_prompts)
    differing = []
    for task in tasks:
        seen = {h for a in audits for h in a.task_prompts.get(task, Counter())}
        if len(seen) > 1:
            per_model = ", ".join(
                f"{a.model.name} {', '.join(h[:8] for h in sorted(a.task_prompts[task]))}"
                for a in audits
                if a.task_prompts.get(task)
            )
            differing.append(f"{task or 'the campaign'} ({per_model})")
    if not differing:
        return []
    shown = "; ".join(differing[:3]) + (
        f"; and {len(differing) - 3} more task(s)" if len(differing) > 3 else ""
    )
    return [f"prompt: sessions of the same task got different prompts in {len(differing)} task(s): {shown}"]


def _budget_skips(audits: list[ModelAudit], with_tasks: bool) -> tuple[list[str], list[str]]:
    """(findings, notes) for sessions skipped because the money ran out.

    Skips that fall on one model (its prices make its sessions dearer) make the comparison unequal
    only when the models were then compared on different tasks: the distinct-rule bug counts
    cover different rules. Without tasks, every session is a repeat of the same hunt: the model
    with fewer sessions has a wider interval, nothing more (a note)."""
    gap = _share_gap(audits, "skipped_budget", "skipped for budget: the shares of sessions")
    if not gap:
        return [], []
    dear = max(audits, key=lambda a: a.share(a.skipped_budget))
    price = f"${dear.model.input_usd_per_mtok}/${dear.model.output_usd_per_mtok} per Mtok in/out"
    ran = [a.tasks_ran for a in audits]
    common = frozenset.intersection(*ran) if ran else frozenset()
    unequal = with_tasks and any(r != common for r in ran)
    if unequal:
        return [
            f"{gap[0]}: {dear.model.name} ({price}) ran fewer tasks than the others, so the models "
            "were compared on different tasks and their bug counts cover different rules; raise "
            "total_usd (or set per_model_usd so each model gets the same share), or compare only "
            "the paired tasks (the McNemar comparison does)"
        ], []
    return [], [
        f"{gap[0]}: {dear.model.name} ({price}) ran fewer sessions; every session repeats the same "
        "hunt, so this widens its interval but leaves the comparison equal (raise total_usd to run them all)"
    ]


def _spread(audits: list[ModelAudit], field: str, what: str) -> list[str]:
    """A finding when sessions did not all see the same value of `field`."""
    return spread([(a.model.name, getattr(a, field)) for a in audits], what)


def _share_gap(audits: list[ModelAudit], field: str, what: str) -> list[str]:
    counts = [(a, getattr(a, field)) for a in audits]
    return share_gap([(a.model.name, n, a.planned) for a, n in counts], what)


def _logical(audits: list[ModelAudit]) -> list[str]:
    with_budgets = [(a.model.name, a.logical) for a in audits if a.logical is not None]
    if not with_budgets:
        return []
    findings = []
    for counter in dict.fromkeys(c for _, la in with_budgets for c in la.limits):
        findings += spread(
            [(name, la.limits.get(counter, Counter())) for name, la in with_budgets],
            f"logical budget: sessions ran under different limits of {counter}",
        )
    # How sessions ended (a counter vs a submit) is shown per model, never a finding: spending
    # the budget is what a model did, not something the harness did to it.
    return findings


def _throttling(audits: list[ModelAudit]) -> list[str]:
    """A note per model whose provider answered 429: its sessions waited (time, not money or
    calls: a refused call is charged nothing and gives its `model_calls` unit back), and a
    wall-clock limit counts that wait."""
    notes = []
    for a in audits:
        if a.throttled or a.throttle_wait_s:
            where = a.model.api_base or "its provider's default endpoint"
            notes.append(
                f"throttling: {a.model.name}'s provider ({where}) answered 429 {a.throttled} time(s); "
                f"{a.throttled_sessions} of its sessions waited {a.throttle_wait_s:.1f} s in all for its "
                "backoff (time only: no charge, no model call counted; a wall_time_s limit counts it)"
            )
    return notes


PROVIDER_GAP = Decimal("0.01")
"""A session whose provider-reported cost differs from ours by more than this share is a note."""


def _reconciliation(runs: list[RecordedRun]) -> list[str]:
    """A note per model with sessions whose provider said they cost more than 1% apart from what
    we charged for the same calls (OpenRouter's usage.cost, litellm's response cost): our prices
    may be stale, or the provider bills a bucket we do not price. Ours is what was charged."""
    gaps: dict[str, list[tuple[Decimal, SessionHistory]]] = {}
    for run in runs:
        for view in run.sessions:
            cost = view.provider_cost
            if cost is None or not cost.calls:
                continue
            gap = cost.gap
            if gap is None:  # we charged nothing: any cost of theirs is the whole gap
                if not cost.usd:
                    continue
                gap = Decimal("Infinity")
            if abs(gap) > PROVIDER_GAP:
                gaps.setdefault(view.planned.model, []).append((gap, view))
    notes = []
    for model, found in gaps.items():
        gap, view = max(found, key=lambda f: abs(f[0]))
        cost = view.provider_cost
        assert cost is not None
        share = "∞" if gap.is_infinite() else f"{gap * 100:+.1f}%"
        notes.append(
            f"provider cost: {model}: {len(found)} session(s) differ by more than "
            f"{PROVIDER_GAP * 100:.0f}% from the provider's own cost (largest: {view.planned.id}, the "
            f"provider ${cost.usd.normalize():f} vs ours ${cost.ours_usd.normalize():f} over "
            f"{cost.calls} call(s), {share}); ours is charged: check the campaign's prices "
            "(cache_read_usd_per_mtok, cache_write_usd_per_mtok) against the provider's"
        )
    return notes


def _could_not_act(
    runs: list[RecordedRun], models: list[Model], grouped: dict[str, list[SessionHistory]]
) -> list[str]:
    """A model most of whose sessions (those it ended itself) never executed an action: its bug
    rate measures its server's set-up, not the model (the leaderboard marks its row)."""
    findings = []
    runners: dict[str, Any] = {}
    for run in runs:  # pooled runs: a profile by the name its sessions ran under
        for name, profile in run.campaign.runners.items():
            runners.setdefault(name, profile)
    for model in models:
        own = [v for v in grouped[model.name] if v.ran and not v.infra_error]
        idle = [v.ending for v in own if v.ending is not None and v.ending.could_not_act]
        if not idle or 2 * len(idle) <= len(own):
            continue
        ending = Counter(e.name for e in idle if e is not None).most_common(1)[0][0]
        causes = Counter(e.cause for e in idle if e is not None and e.name == ending and e.cause)
        cause = causes.most_common(1)[0][0] if causes else None
        profiles = Counter(v.runner for v in own if v.runner in runners)
        profile = runners[profiles.most_common(1)[0][0] if profiles else runs[0].campaign.runner]
        # What stood in the way, where its runner found out: the set-up (a server or a chat template
        # without tool calling) or the model itself.
        measures = (
            "the model's own failure to act" if cause == "model" else "its server's set-up, not the model"
        )
        why = f"; {CAUSE_WORDS[cause]}" if cause else ""
        findings.append(
            f"could not act: {model.name}: {len(idle)} of {len(own)} sessions ended without executing a "
            f"single action ({ending}: {MEANING[ending]}{why}), so its bug rate measures {measures}; "
            f"fix: {fix(ending, profile.model_dump().get('action_format'), cause)}"
        )
    return findings


def _limits(models: list[Model]) -> list[str]:
    findings = []
    limits = {m.max_output_tokens for m in models}
    if len(limits) > 1:
        detail = ", ".join(f"{m.name} {m.max_output_tokens}" for m in models)
        findings.append(f"token limits: max_output_tokens differs between models: {detail}")
    free = [m.name for m in models if m.input_usd_per_mtok == 0 or m.output_usd_per_mtok == 0]
    if free:
        findings.append(f"prices: zero price for {', '.join(free)}: the money budget cannot bound its calls")
    return findings


def audit(runs: list[RecordedRun]) -> Audit:
    models = models_of(runs)
    grouped = sessions_by_model(runs)
    audits = [_model_audit(m, grouped[m.name], runs) for m in models]
    findings: list[str] = []
    if not all(run.campaign.budget.enforce for run in runs):
        findings.append("budget: not enforced (enforce = false): sessions ran without a reserved budget")
    findings += _spread(audits, "environments", "environment: sessions ran on different targets")
    findings += _prompts(audits)
    findings += _spread(audits, "reservations", "budget: sessions reserved different budgets")
    findings += _spread(audits, "runners", "runner: switched mid-run, models compared across runners")
    skips, notes = _budget_skips(audits, all(run.campaign.tasks for run in runs))
    findings += skips
    findings += _share_gap(audits, "infra_errors", "infrastructure errors: the shares of sessions")
    findings += _could_not_act(runs, models, grouped)
    findings += _logical(audits)
    findings += evidence.findings(runs)
    findings += _limits(models)
    return Audit(audits, findings, notes + _throttling(audits) + _reconciliation(runs))
