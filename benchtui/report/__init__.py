"""`benchtui report`: the leaderboard with uncertainty, the fairness audit, and the spend over time,
computed from run dirs (read only). `build` is the one function behind the CLI and the TUI's
summary, so the two never disagree."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchtui.core.atomic import gc_paused
from benchtui.core.errors import BadInput
from benchtui.core.money import ZERO
from benchtui.engine.counting import bug_rule, judged_by
from benchtui.report.audit import Audit, audit
from benchtui.report.board_power import DIFFERENCE, BoardPower, board_power
from benchtui.report.leaderboard import (
    Comparison,
    ModelStats,
    counted,
    leaderboard,
    shared_ranks,
    task_matrix,
)
from benchtui.report.once import count_once
from benchtui.report.pooling import pooling, refusal
from benchtui.report.runs import RecordedRun, identity_key, read_runs
from benchtui.report.shortlist import ModelShortlist, findings, shortlists

__all__ = ["CampaignReport", "build"]


@dataclass(frozen=True, slots=True)
class Point:
    """One attempt's end on a model's curve: time into the campaign, spend and bugs so far."""

    elapsed_s: float
    spent_usd: float
    verified_bugs: int


@dataclass(frozen=True, slots=True)
class CampaignReport:
    runs: list[RecordedRun]
    models: list[ModelStats]
    comparisons: list[Comparison]
    fairness: Audit
    ranks: list[int] = field(default_factory=list)
    """Per model (in `models` order): models the data cannot separate share a rank."""
    matrix: dict[str, Any] | None = None
    """Task × model outcomes (campaigns with tasks): see `leaderboard.task_matrix`."""

    def rank(self, n: int) -> int:
        """The rank of `models[n]`."""
        return self.ranks[n] if n < len(self.ranks) else n + 1

    @property
    def ranked_by(self) -> str:
        """`verified_bugs`, or `bugs` when no verifier judged any certificate (fake, demo runners)."""
        if self.models and all(m.judged_by == "runner" for m in self.models):
            return "bugs"
        return "verified_bugs"

    shortlists: list[ModelShortlist] | None = None
    """A shortlist campaign (`[protocol]`): per model, its shortlist and bugs@K."""
    power: BoardPower | None = None
    """What the board separates at 80% power, and what a difference asked of it needs."""
    top50: list[Any] | None = None
    """Runs of the benchmark's own Top50 runner: per model, `runs_top50.ModelRuns` (None: none)."""

    @property
    def identity(self) -> str:
        return identity_key(self.runs[0].identity)

    def to_json(self) -> dict[str, Any]:
        return {
            "runs": [str(run.path) for run in self.runs],
            "campaign": self.runs[0].campaign.name,
            "identity": self.identity,
            "ranked_by": self.ranked_by,
            "models": [{"rank": self.rank(n), **m.to_json()} for n, m in enumerate(self.models)],
            "comparisons": [c.to_json() for c in self.comparisons],
            "matrix": self.matrix,
            "fairness": self.fairness.to_json(),
            **({"shortlist": [s.to_json() for s in self.shortlists]} if self.shortlists is not None else {}),
            **({"top50": [m.to_json() for m in self.top50]} if self.top50 is not None else {}),
            "run_details": [run_details(run) for run in self.runs],
            "power": self.power.to_json() if self.power is not None else None,
        }

    def curves(self) -> dict[str, list[Point]]:
        """Per model, cumulative spend and distinct verified bugs after each attempt ended; pooled
        runs follow one another on the time axis, each from its own first journal line."""
        by = {m.model: m.judged_by for m in self.models}
        bug_rules = {
            (run.path, v.planned.id, v.attempt): rule
            for run in self.runs
            for v in run.sessions
            if (rule := bug_rule(counted(v))) is not None
            and judged_by(v.judgement) == by.get(v.planned.model, "verifier")
        }
        curves: dict[str, list[Point]] = {m.model: [Point(0.0, 0.0, 0)] for m in self.models}
        spent = {m: ZERO for m in curves}
        rules: dict[str, set[str]] = {m: set() for m in curves}
        offset = 0.0
        for run in sorted(self.runs, key=lambda r: r.t0 or 0.0):
            t0, last = run.t0 or 0.0, 0.0
            for rec in sorted(run.ends, key=lambda r: r.t):
                model, at = rec.model, offset + max((rec.t or t0) - t0, 0.0)
                spent[model] += rec.cost_usd
                rule = bug_rules.get((run.path, rec.session, rec.attempt))
                if rule is not None:
                    rules[model].add(rule)
                curves[model].append(Point(at, float(spent[model]), len(rules[model])))
                last = max(last, at)
            offset = last
        return curves


def run_details(run: RecordedRun) -> dict[str, Any]:
    """A run's campaign and identity, and its history: when it started (a quick trial says how it
    was cut) and each extension (what it added, when)."""
    history = run.record.history
    start = history[0] if history and history[0].event == "start" else None
    return {
        "run": str(run.path),
        "campaign": run.campaign.name,
        "identity": identity_key(run.identity),
        "started": start.at if start else None,
        "trial": run.record.trial.model_dump(mode="json") if run.record.trial else None,
        "extensions": [
            {k: v for k, v in e.to_json().items() if k not in ("event", "campaign_sha256")}
            for e in run.record.extensions
        ],
    }


def build(
    run_dirs: list[Path], *, pool_anyway: bool = False, difference: float = DIFFERENCE
) -> CampaignReport:
    """The report of one run, or of several pooled: runs of one campaign, or of different ones
    whose sessions were given the same (report/pooling.py); BadInput naming what differs, unless
    `pool_anyway` (then each difference is a finding of the audit). `difference`: what the power
    answer asks about (a fraction: 0.10 is 10 points of bug rate)."""
    unique = {path.resolve(): path for path in reversed(run_dirs)}  # a run given twice counts once
    # Many small containers and no cycles: the cyclic GC's passes would cost a third of the time.
    with gc_paused():
        runs = read_runs(list(reversed(unique.values())))
        once = count_once(runs)  # a run dir and its copy: each session once, wherever it lives
        pooled = pooling(runs)
        if pooled.differences and not pool_anyway:
            raise BadInput(refusal(runs, pooled.differences))
        models, comparisons = leaderboard(runs)
        ranks = shared_ranks(models, comparisons)
        matrix = task_matrix(runs, [m.model for m in models])
        fairness = audit(runs)
        pooled_anyway = [f"pooled anyway: {d}" for d in pooled.differences]
        triage = findings(runs) if runs[0].campaign.protocol is not None else []
        from benchtui.report import runs_top50

        top50 = runs_top50.read(runs, [m.model for m in models])
        fairness = dataclasses.replace(
            fairness,
            findings=[*pooled_anyway, *fairness.findings, *triage, *runs_top50.findings(top50 or [])],
            notes=[*once.notes, *pooled.notes, *fairness.notes, *runs_top50.notes(top50 or [])],
        )
        power = board_power([c.plan for c in comparisons], difference)
        return CampaignReport(
            runs, models, comparisons, fairness, ranks, matrix, shortlists(runs), power=power, top50=top50
        )
