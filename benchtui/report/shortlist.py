"""The shortlist protocol's numbers: per model, what its triage committed and the distinct-rule
bugs its episodes found among the shortlist, in total and among the first K (bugs@K).

The benchmark's cut points are 10, 25 and 50 of a 50-rule shortlist; a campaign with another
`shortlist_size` gets them scaled (bugs@10 of a 20-rule shortlist counts its first 4 rules). A
model whose triage committed fewer rules than asked is still counted over the positions it has:
too few is its own outcome. Ties are ties.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from benchtui.engine.phases import Triage
from benchtui.report.leaderboard import found_bug, rule_of
from benchtui.report.runs import RecordedRun, SessionHistory, sessions_by_model

CUTS = (10, 25, 50)
"""bugs@K of the benchmark's 50-rule shortlist."""
NOMINAL = 50


def cut_points(size: int) -> list[tuple[str, int]]:
    """(label, K) for each of the benchmark's cuts, scaled to a shortlist of `size` (K >= 1)."""
    return [(f"bugs@{cut}", max(1, round(size * cut / NOMINAL))) for cut in CUTS]


@dataclass(frozen=True, slots=True)
class ModelShortlist:
    model: str
    size: int
    committed: tuple[str, ...]
    """The rules its triage committed, in its order (empty: no triage committed yet)."""
    refused: int
    triage_state: str
    bug_rules: frozenset[str]
    """Shortlisted rules with a bug found by their own episode (verified or runner-judged)."""
    judged_by: str

    @property
    def bugs(self) -> int:
        return len(self.bug_rules)

    def bugs_at(self, k: int) -> int:
        return len(self.bug_rules & set(self.committed[:k]))

    def to_json(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "shortlist_size": self.size,
            "committed": len(self.committed),
            "refused": self.refused,
            "triage": self.triage_state,
            "bugs": self.bugs,
            "judged_by": self.judged_by,
            "bugs_at": [
                {"label": label, "k": k, "bugs": self.bugs_at(k)} for label, k in cut_points(self.size)
            ],
            "rules": list(self.committed),
        }


def _bug_rule(view: SessionHistory) -> str | None:
    """The episode's rule when it found a bug in that rule (a bug in another rule is off task)."""
    if not found_bug(view) or view.planned.task is None:
        return None
    return view.planned.task if rule_of(view) == view.planned.task else None


def shortlists(runs: list[RecordedRun]) -> list[ModelShortlist] | None:
    """Per model, its shortlist and bugs@K; None for campaigns without `[protocol]`."""
    protocol = runs[0].campaign.protocol
    if protocol is None:
        return None
    out = []
    for model, views in sessions_by_model(runs).items():
        committed: list[str] = []
        refused, state = 0, "not run"
        for run in runs:  # pooled runs of one identity: the first committed shortlist speaks
            triage = run.triages.get(model)
            if triage is None:
                continue
            state = triage.state
            given = triage.phase
            if isinstance(given, Triage) and given.shortlist is not None and not committed:
                committed = [e.rule for e in given.shortlist]
                refused = len(given.refused)
        found = frozenset(r for v in views if (r := _bug_rule(v)) is not None) & frozenset(committed)
        judged = {v.judgement.judged_by for v in views if found_bug(v) and v.judgement is not None}
        judged_by = "runner" if "runner" in judged else "verifier" if judged else "-"
        out.append(
            ModelShortlist(model, protocol.shortlist_size, tuple(committed), refused, state, found, judged_by)
        )
    return out


def text(rows: list[ModelShortlist]) -> str:
    """The shortlist table of the text report."""
    if not rows:
        return ""
    labels = [label for label, _ in cut_points(rows[0].size)]
    head = f"{'shortlist':28} {'rules':>7} {'bugs':>5} " + " ".join(f"{label:>8}" for label in labels)
    lines = [head, "-" * len(head)]
    for row in rows:
        cells = " ".join(f"{row.bugs_at(k):>8}" for _, k in cut_points(row.size))
        lines.append(f"{row.model[:28]:28} {len(row.committed):>3}/{row.size:<3} {row.bugs:>5} {cells}")
    return "\n".join(lines)


def findings(runs: list[RecordedRun]) -> list[str]:
    """The fairness audit of the triage: the same shortlist size and triage budget for every
    model, as its journal lines recorded them."""
    given: dict[str, set[str]] = {}
    for run in runs:
        for model, triage in run.triages.items():
            if triage.ended:
                size, limits = (p.size, p.limits) if isinstance(p := triage.phase, Triage) else (None, None)
                given.setdefault(f"shortlist_size {size}, triage {_limits(limits)}", set()).add(model)
    if len(given) <= 1:
        return []
    parts = "; ".join(f"{what}: {', '.join(sorted(models))}" for what, models in sorted(given.items()))
    return [f"triage: models got different triage budgets or shortlist sizes ({parts})"]


def _limits(limits: Mapping[str, int] | None) -> str:
    if limits is None:
        return "(not recorded)"
    return " ".join(f"{k}={limits[k]}" for k in sorted(limits))
