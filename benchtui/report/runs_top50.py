"""The report of Top50 runs (the benchmark's own runner, runner kind `top50`): per model, its N
runs' verified distinct-rule bugs among their Top50, and beside it the benchmark's own rule.

Per model: the mean bugs a run with its t interval (each run its own unit), their distribution,
bugs@10/25/50 (means a run), first- and second-attempt accepts, pred calls per bug, cap hits (from
the runs' ledgers), tokens; and the benchmark's board rule, which keeps each model's best run,
with what picking the best of N adds by luck alone: the exact expected maximum of N draws from
the runs' own distribution, minus their mean (report/stats.best_of_n). Counts are the scorer's
(report/top50_runs.py). Only finished runs its runner certified count (done, 50 episodes, no
run_error, its `rankable` flag: the scorer counts nothing of an uncertified one); the others are said, and each run's label (`rankable`, or `local:<commit>/<pred>`) is shown. Runs of
several campaigns pool as the rest of the report does.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from dataclasses import dataclass
from html import escape
from typing import Any

from benchtui.core import pins
from benchtui.core.submission import PLANNED_EPISODES as PLANNED
from benchtui.core.submission import Usage
from benchtui.report import top50_runs
from benchtui.report.runs import RecordedRun
from benchtui.report.stats import BestOfN, Clustered, best_of_n, mean_interval
from benchtui.report.top50_runs import Top50Run, Top50Runs

CUTS = top50_runs.TOP


@dataclass(frozen=True, slots=True)
class ModelRuns:
    model: str
    runs: tuple[Top50Run, ...]
    """Its finished runs, in order."""
    left_out: int
    """Runs that did not finish (run_error, cut off, no submission): not counted."""
    wasted_attempts: int

    @property
    def bugs(self) -> list[int]:
        return [r.score.bugs for r in self.runs]

    @property
    def mean(self) -> Clustered:
        """The t interval, cut to what a run can count (0 to its 50 rules): two runs of 1 and 3
        give [-10.7, 14.7] uncut."""
        found = mean_interval([float(b) for b in self.bugs])
        if found.ci95 is None:
            return found
        low, high = found.ci95
        return dataclasses.replace(found, ci95=(max(low, 0.0), min(high, float(PLANNED))))

    @property
    def distribution(self) -> dict[int, int]:
        return dict(sorted(Counter(self.bugs).items()))

    def at(self, k: int) -> float | None:
        return sum(r.score.at(k) for r in self.runs) / len(self.runs) if self.runs else None

    @property
    def first_attempt(self) -> int:
        return sum(r.score.first_attempt for r in self.runs)

    @property
    def second_attempt(self) -> int:
        return sum(r.score.second_attempt for r in self.runs)

    @property
    def pred_calls(self) -> int:
        return sum(r.score.pred_calls for r in self.runs)

    @property
    def pred_calls_per_bug(self) -> float | None:
        bugs = sum(self.bugs)
        return round(self.pred_calls / bugs, 4) if bugs else None

    @property
    def cap_hits(self) -> dict[str, int]:
        hits: Counter[str] = Counter()
        for r in self.runs:
            hits.update(r.score.cap_hits)
        return dict(sorted(hits.items()))

    @property
    def usage(self) -> Usage:
        total = Usage()
        for r in self.runs:
            total = total + r.score.usage
        return total

    @property
    def best(self) -> BestOfN:
        """The benchmark's rule (its board keeps each model's best run) beside the mean."""
        return best_of_n([float(b) for b in self.bugs])

    @property
    def labels(self) -> dict[str, int]:
        return dict(Counter(r.label for r in self.runs))

    @property
    def disagreements(self) -> list[str]:
        return [f"{r.session} attempt {r.attempt}: {d}" for r in self.runs for d in r.disagreements]

    def to_json(self) -> dict[str, Any]:
        mean = self.mean
        return {
            "model": self.model,
            "runs": len(self.runs),
            "left_out": self.left_out,
            "wasted_attempts": self.wasted_attempts,
            "labels": self.labels,
            "verified_bugs": {
                "mean": mean.value,
                "ci95": list(mean.ci95) if mean.ci95 else None,
                "per_run": self.bugs,
                "distribution": {str(k): v for k, v in self.distribution.items()},
            },
            "bugs_at": {str(k): self.at(k) for k in CUTS},
            "first_attempt_accepts": self.first_attempt,
            "second_attempt_accepts": self.second_attempt,
            "pred_calls": self.pred_calls,
            "pred_calls_per_bug": self.pred_calls_per_bug,
            "cap_hits": self.cap_hits,
            "usage_totals": self.usage.to_json(),
            "best_of_n": self.best.to_json(),
            "rechecked": sum(r.rechecked for r in self.runs),
            "disagreements": self.disagreements,
            "run_rows": [run_json(r) for r in self.runs],
        }


def run_json(run: Top50Run) -> dict[str, Any]:
    s = run.score
    return {
        "run": str(run.run_dir),
        "session": run.session,
        "attempt": run.attempt,
        "label": run.label,
        "verified_bugs": s.bugs,
        **{f"bugs_at_{k}": s.at(k) for k in CUTS},
        "first_attempt_accepts": s.first_attempt,
        "second_attempt_accepts": s.second_attempt,
        "pred_calls_per_bug": s.pred_calls_per_bug,
        "cap_hits": dict(s.cap_hits),
        "usage_totals": s.usage.to_json(),
        "sha256": run.sha256,
    }


def by_model(found: Top50Runs, models: list[str]) -> list[ModelRuns]:
    """Per model (in `models` order, then any other model a submission names), its runs."""
    order = list(dict.fromkeys([*models, *(r.model for r in found.runs), *(m.model for m in found.missing)]))
    left: Counter[str] = Counter(m.model for m in found.missing)
    left.update(r.model for r in found.runs if not r.counted)
    rows = []
    once = {r.sha256: r for r in found.runs if r.counted}  # a run dir pooled with its copy: once
    for model in order:
        runs = tuple(r for r in once.values() if r.model == model)
        if runs or left[model]:
            rows.append(ModelRuns(model, runs, left[model], found.wasted_attempts_of(model)))
    return rows


def read(runs: list[RecordedRun], models: list[str]) -> list[ModelRuns] | None:
    """The Top50 section of the report of these runs; None when none holds a Top50 run."""
    ended = {
        run.path: [
            top50_runs.Ended(
                v.planned.id, v.planned.model, v.planned.index, v.attempt, v.state, v.runner or ""
            )
            for v in run.sessions
        ]
        for run in runs
    }
    found = top50_runs.read([run.path for run in runs], ended)
    if not found.runs and not found.missing:
        return None
    return by_model(found, models)


def findings(rows: list[ModelRuns]) -> list[str]:
    """For the fairness audit: accepted certificates benchtui's verifier did not confirm."""
    return [
        f"top50: {row.model} {d} (accepted by the benchmark's runner, not by benchtui's verifier)"
        for row in rows
        for d in row.disagreements
    ]


def notes(rows: list[ModelRuns]) -> list[str]:
    local = sorted({label for row in rows for label in row.labels if label != pins.RANKABLE})
    if not local:
        return []
    shown = ", ".join(pins.short(label) for label in local)
    return [f"top50: runs labelled {shown} are local variants, not rankable by the benchmark (its pins: "
            f"library {pins.CURRENT.library_commit[:8]}, pred {pins.CURRENT.pred_version})"]  # fmt: skip


# --- text and html ---------------------------------------------------------------------------

COLUMNS = (
    "model",
    "runs",
    "label",
    "bugs/run [95% CI]",
    "per run",
    "@10/@25/@50",
    "1st/2nd",
    "pred/bug",
    "cap hits",
    "best (board)",
    "E[best of N]",
    "inflation",
)
LEGEND = {
    "runs": "finished runs counted (+N: runs that did not finish or that the runner did not certify, not counted)",
    "label": "rankable: the runner's flag and the benchmark's published pins; else local:<commit>/<pred>",
    "bugs/run [95% CI]": "verified distinct-rule bugs among a run's Top50, mean over runs, t interval (runs as units)",
    "per run": "each run's bugs, lowest first (the distribution)",
    "@10/@25/@50": "bugs among the first 10, 25, 50 shortlisted rules, mean per run",
    "1st/2nd": "accepts at an episode's first / second submit, over all runs",
    "pred/bug": "pred calls of all episodes / bugs",
    "cap hits": "episodes whose counter ended at its limit (gen: model generations, sh: shell actions, "
    "pred, solve), over all runs",
    "best (board)": "the benchmark's board rule: the model's best run",
    "E[best of N]": "the expected best of N runs drawn from its runs' distribution (N = its runs)",
    "inflation": "E[best of N] - mean: what the best-of-N rule adds by luck alone",
}
_SHORT = {"model_generations": "gen", "shell_actions": "sh", "pred_calls": "pred", "solve_calls": "solve"}


def _num(value: float | None, digits: int = 1) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def row(r: ModelRuns) -> tuple[str, ...]:
    mean, best = r.mean, r.best
    ci = f" [{mean.ci95[0]:.1f}, {mean.ci95[1]:.1f}]" if mean.ci95 else ""
    labels = ", ".join(pins.short(label) for label in r.labels) or "-"
    hits = " ".join(f"{_SHORT.get(k, k)} {v}" for k, v in r.cap_hits.items()) or "0"
    return (
        r.model,
        f"{len(r.runs)}" + (f" +{r.left_out}" if r.left_out else ""),
        labels,
        f"{_num(mean.value)}{ci}",
        " ".join(str(b) for b in sorted(r.bugs)) or "-",
        "/".join(_num(r.at(k)) for k in CUTS),
        f"{r.first_attempt}/{r.second_attempt}",
        _num(r.pred_calls_per_bug),
        hits,
        _num(best.best, 0),
        _num(best.expected_best, 2),
        _num(best.inflation, 2),
    )


def _table(lines: list[tuple[str, ...]]) -> list[str]:
    widths = [max(len(line[i]) for line in lines) for i in range(len(lines[0]))]
    return ["  ".join(cell.ljust(w) for cell, w in zip(line, widths, strict=True)).rstrip() for line in lines]


def text(rows: list[ModelRuns]) -> list[str]:
    out = ["Top50 runs (the benchmark's own runner; counted by its scorer's rule):"]
    out += _table([COLUMNS, *(row(r) for r in rows)])
    out += [f"{c}: {LEGEND[c]}" for c in COLUMNS if c in LEGEND]
    for r in rows:
        out += [f"  ! {d}: benchtui's verifier did not confirm it" for d in r.disagreements]
        if r.wasted_attempts:
            out.append(
                f"  {r.model}: {r.wasted_attempts} attempts cut off and run again (their spend: wasted)"
            )
    return out


def html(rows: list[ModelRuns]) -> str:
    head = "".join(f"<th>{escape(c)}</th>" for c in COLUMNS)
    body = "".join("<tr>" + "".join(f"<td>{escape(c)}</td>" for c in row(r)) + "</tr>" for r in rows)
    legend = "".join(f"<li><b>{escape(c)}</b>: {escape(LEGEND[c])}</li>" for c in COLUMNS if c in LEGEND)
    return (
        "<h2>Top50 runs</h2>\n<p class=\"note\">The benchmark's own runner; counted by its scorer's rule.</p>"
        f'<table id="top50"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'
        f'<ul class="note" id="top50-legend">{legend}</ul>\n'
    )
