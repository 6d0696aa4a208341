"""The public board (`benchtui report --public`): aggregates per model, and nothing else.

On a fixed public library commit a confirmed finding counts for whoever submits it, so what is
published must not carry the answer key: no rule with a bug, no certificate or its instances, no
hypothesis, prompt, observation or trajectory. The board is built from counts, rates and the
run's provenance only (library commit, the target's programs, runner kinds, benchtui versions,
dates), every repeated run of a model pooled as more trials (never a best-of pick), and it is
checked again as written (report/public_guard.py): the schema below admits no free text but model
names, and the runs' own rules and texts are searched for in it.
"""

from __future__ import annotations

from collections import Counter
from typing import Annotated, Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field

import benchtui
from benchtui.core import workspace
from benchtui.core.contract import TOOLS
from benchtui.report import CampaignReport
from benchtui.report.leaderboard import found_bug, is_trial
from benchtui.report.runs import RecordedRun, SessionHistory, sessions_by_model

Name = Annotated[str, Field(max_length=200, pattern=r"^[^\x00-\x1f\x7f<>&\"\\]+$")]
"""A model name: printable, no markup (it is shown in the page as it is)."""
Version = Annotated[str, Field(max_length=200, pattern=r"^[\x20-\x7e]+$")]
Commit = Annotated[str, Field(pattern=r"^([0-9a-f]{7,64}|unborn)$")]
Kind = Annotated[str, Field(max_length=200, pattern=r"^[A-Za-z0-9._:-]+$")]
Stamp = Annotated[str, Field(pattern=r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")]
Unit = Annotated[str, Field(pattern=r"^(model_calls|shell_actions|submits|tools\.[A-Za-z0-9._+= -]{1,100})$")]
Cut = Annotated[str, Field(pattern=r"^bugs@\d+$")]
Bucket = Literal["input", "cache_read", "cache_write", "output", "reasoning"]


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Rate(Strict):
    hits: int = Field(ge=0)
    trials: int = Field(ge=0)
    value: float | None = Field(ge=0, le=1)
    ci95: tuple[float, float] | None


class CapHits(Strict):
    skipped_budget: int = Field(ge=0)
    """Sessions that never started: the money could no longer hold their budget."""
    ended_by_a_counter: int = Field(ge=0)
    """Sessions a logical limit refused a unit (their last attempt)."""
    by_counter: dict[Unit, int] = Field(default_factory=dict)


class Dates(Strict):
    first: Stamp
    last: Stamp


class ModelRow(Strict):
    rank: int = Field(ge=1)
    model: Name
    trials: int = Field(ge=0)
    bugs: int = Field(ge=0)
    """Distinct bugs the ranking counts (verified, or claimed where no verifier judged)."""
    judged_by: Literal["verifier", "runner"]
    bug_rate: Rate
    bugs_at: dict[Cut, int] | None
    """A shortlist campaign: bugs among the first K shortlisted (`bugs@10`, …)."""
    first_attempt_accepts: int = Field(ge=0)
    second_attempt_accepts: int = Field(ge=0)
    tool_calls: dict[Unit, int]
    """Units used by the model's sessions, per counted tool (and `shell_actions`)."""
    tool_calls_per_bug: dict[Unit, float | None]
    cap_hits: CapHits
    spent_usd: float = Field(ge=0)
    tokens: int = Field(ge=0)
    tokens_by_bucket: dict[Bucket, Annotated[int, Field(ge=0)]] = Field(default_factory=dict)
    """`tokens` as priced: input, cache_read, cache_write, output (reasoning is part of output);
    empty for runs written before buckets."""
    library_commits: list[Commit]
    programs: dict[Kind, list[Version]]
    """The target's programs, `<version>@sha256:<binary>` (`{"pred": ["pred 0.5.0@sha256:…"]}`)."""
    runners: list[Kind]
    benchtui: list[Version]
    dates: Dates | None


class Comparison(Strict):
    a: Name
    b: Name
    test: Literal["mcnemar_exact", "fisher_exact"]
    p_value: float | None
    p_adjusted: float | None
    separable: bool


class Fairness(Strict):
    fair: bool
    findings: int = Field(ge=0)
    """How many findings the audit has (their text names tasks: the full report has them)."""


class Board(Strict):
    board: Literal["benchtui public board"] = "benchtui public board"
    format: Literal[1] = 1
    benchtui: Version
    ranked_by: Literal["verified_bugs", "bugs"]
    fairness: Fairness
    models: list[ModelRow]
    comparisons: list[Comparison]


def board(report: CampaignReport) -> Board:
    """The public board of a report (its runs already pooled, or refused)."""
    grouped = sessions_by_model(report.runs)
    shortlists = {s.model: s for s in report.shortlists or []}
    rows = []
    for n, m in enumerate(report.models):
        views = grouped[m.model]
        runs = [run for run in report.runs if any(v.run == str(run.path) for v in views)]
        ran = [v for v in views if v.ran]
        tools = _tool_calls(ran)
        short = shortlists.get(m.model)
        audit = next(a for a in report.fairness.models if a.model.name == m.model)
        accepts = Counter(_accepted_at(v) for v in ran if is_trial(v))
        rows.append(
            ModelRow(
                rank=report.rank(n),
                model=m.model,
                trials=m.bug_rate.trials,
                bugs=len(m.rules),
                judged_by=m.judged_by,
                bug_rate=Rate.model_validate(m.bug_rate.to_json()),
                bugs_at={label: short.bugs_at(k) for label, k in _cuts(short.size)} if short else None,
                first_attempt_accepts=accepts[0],
                second_attempt_accepts=accepts[1],
                tool_calls=tools,
                tool_calls_per_bug={
                    c: (round(u / len(m.rules), 3) if m.rules else None) for c, u in tools.items()
                },
                cap_hits=CapHits(
                    skipped_budget=m.states["skipped_budget"],
                    ended_by_a_counter=sum(bool(v.exhausted) for v in ran),
                    by_counter=dict(Counter(c for v in ran for c in v.exhausted)),
                ),
                spent_usd=float(m.spent_usd),
                tokens=m.tokens,
                tokens_by_bucket={b: n for b, n in m.usage.items() if b in get_args(Bucket)},  # type: ignore[misc]
                library_commits=_commits(views, runs),
                programs=_programs(runs),
                runners=sorted({_kind(run, v) for v in ran for run in runs if v.run == str(run.path)}),
                benchtui=sorted({e.benchtui for run in runs for e in run.record.history if e.benchtui})
                or ["unrecorded"],
                dates=Dates.model_validate(audit.dates()) if audit.dates() else None,
            )
        )
    return Board(
        benchtui=benchtui.__version__,
        ranked_by="bugs" if report.ranked_by == "bugs" else "verified_bugs",
        fairness=Fairness(fair=report.fairness.fair, findings=len(report.fairness.findings)),
        models=rows,
        comparisons=[
            Comparison.model_validate({k: v for k, v in c.to_json().items() if k in Comparison.model_fields})
            for c in report.comparisons
        ],
    )


def _cuts(size: int) -> list[tuple[str, int]]:
    from benchtui.report.shortlist import cut_points

    return cut_points(size)


def _accepted_at(view: SessionHistory) -> int | None:
    """Which submission was the session's first accepted one (0: its first), None: none was."""
    checked = view.judgement.checked if view.judgement else ()
    if checked:
        return next((i for i, c in enumerate(checked) if c.status == "accepted" and not c.off_task), None)
    return 0 if found_bug(view) else None


def _tool_calls(ran: list[SessionHistory]) -> dict[str, int]:
    used: Counter[str] = Counter()
    for view in ran:
        used.update(
            {c: n for c, n in (view.counters or {}).items() if c.startswith(TOOLS) or c == "shell_actions"}
        )
    return dict(sorted(used.items()))


def _commits(views: list[SessionHistory], runs: list[RecordedRun]) -> list[str]:
    prints = {v.environment for v in views if v.environment}
    prints |= {e.fingerprint for run in runs for e in run.record.history if e.fingerprint}
    return sorted({workspace.library_commit(p) for p in prints})


def _programs(runs: list[RecordedRun]) -> dict[str, list[str]]:
    found: dict[str, set[str]] = {}
    for run in runs:
        for name, value in run.record.programs.items():
            found.setdefault(name, set()).add(value)
    return {name: sorted(values) for name, values in sorted(found.items())}


def _kind(run: RecordedRun, view: SessionHistory) -> str:
    profile = run.campaign.runners.get(view.runner or "")
    return str(profile.kind) if profile is not None else "unrecorded"


def to_json(b: Board) -> dict[str, Any]:
    return b.model_dump(mode="json")
