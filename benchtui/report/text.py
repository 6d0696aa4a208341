"""The report as plain text (the default of `benchtui report`), and the cells the TUI shares."""

from __future__ import annotations

from collections import Counter
from decimal import Decimal

from benchtui.core.endings import ENDINGS, MEANING
from benchtui.core.money import fmt
from benchtui.engine.campaign import Model
from benchtui.report import CampaignReport
from benchtui.report.audit import ModelAudit
from benchtui.report.leaderboard import CERTIFICATE_KINDS, ModelStats
from benchtui.report.logical import LogicalAudit, limits_line, table_rows
from benchtui.report.stats import Rate

COLUMNS = (
    "#",
    "model",
    "ran/planned",
    "infra",
    "bug rules",
    "bug rate [95% CI]",
    "not hunting",
    "certs c/cl/r/o/i/u",
    "spent",
    "wasted",
    "$/bug",
    "tokens",
    "wall med/p90",
)


CERTS_LEGEND = "certs c/cl/r/o/i/u: confirmed/claimed/rejected/off_task/inconclusive/unverified"
"""What the letters of the certs column stand for (the text report and the TUI's summary)."""

CANNOT_ACT_MARK = " (!)"
"""After a model's name: most of its sessions could not act (the audit says why and the fix)."""

LEGEND: dict[str, str] = {
    "#": "rank; models the data cannot separate share one",
    "model": f"the model;{CANNOT_ACT_MARK} most of its sessions could not act (see the audit)",
    "ran/planned": "sessions that ran, of those planned",
    "infra": "sessions that ended in an infrastructure error (not trials; --resume retries them)",
    "bug rules": "distinct rules with a bug (a rule counts once, however many sessions or "
    "certificates found it); `claimed`: judged only by a runner without a verifier",
    "bug rate [95% CI]": "sessions with a bug / trials (sessions that ran and got a model answer), "
    "with its 95% Wilson interval",
    "not hunting": "trials the model ended without hunting (format errors, empty answers, its "
    "context window, an agent that failed: see Endings)",
    "certs c/cl/r/o/i/u": "certificates by verdict: confirmed (a verifier), claimed (the runner "
    "alone), rejected, off_task (another rule than the session's task), inconclusive, unverified",
    "spent": "money spent by its sessions, failed calls included",
    "wasted": "of it, spent by attempts that were interrupted or failed (retried on --resume)",
    "$/bug": "spent / bug rules (only with a bug)",
    "tokens": "input + output tokens",
    "wall med/p90": "a session's wall time: median / 90th percentile",
}
"""What each leaderboard column means: under the text and HTML reports and the TUI's summary."""


def legend_lines(columns: tuple[str, ...] = COLUMNS) -> list[str]:
    """`column: meaning`, one line each, for the columns shown."""
    return [f"{c}: {LEGEND[c]}" for c in columns if c in LEGEND]


def rate_text(rate: Rate) -> str:
    if rate.value is None or rate.ci95 is None:
        return "-"
    low, high = rate.ci95
    return f"{rate.value:.0%} [{low:.0%}, {high:.0%}]"


def money_or_dash(value: Decimal | None) -> str:
    return fmt(value) if value is not None else "-"


def seconds(value: float | None) -> str:
    return f"{value:.1f}s" if value is not None else "-"


def leaderboard_row(rank: int, m: ModelStats) -> tuple[str, ...]:
    """One leaderboard line: the same cells in the text report and the TUI's summary."""
    c = m.certificates
    return (
        str(rank),
        m.model + (CANNOT_ACT_MARK if m.cannot_act else ""),
        f"{m.ran}/{m.planned}",
        str(m.infra_errors),
        bugs_cell(m),
        rate_text(m.bug_rate),
        str(m.not_hunting),
        "/".join(str(c[k]) for k in CERTIFICATE_KINDS),
        fmt(m.spent_usd),
        fmt(m.wasted_usd),
        money_or_dash(m.usd_per_bug),
        f"{m.tokens:,}",
        f"{seconds(m.wall_s['median'])}/{seconds(m.wall_s['p90'])}",
    )


def bugs_cell(m: ModelStats) -> str:
    """The distinct-rule bugs the ranking counts: verified, or `N claimed` (no verifier judged)."""
    return str(len(m.rules)) if m.judged_by == "verifier" else f"{len(m.rules)} claimed"


def ranked_by_note(report: CampaignReport) -> str:
    if report.ranked_by == "bugs":
        kinds = sorted({run.campaign.runners[run.campaign.runner].kind for run in report.runs})
        return (
            f"ranked by bugs the runner claimed ({', '.join(kinds)}: it has no verifier, so no bug is "
            "confirmed; claimed bugs are not verified bugs)"
        )
    confirmed = sum(m.verified_bugs for m in report.models)
    return "ranked by verified distinct-rule bugs (a rule counts once; a verifier confirmed each)" + (
        "" if confirmed else "; none confirmed yet"
    )


def ending_lines(report: CampaignReport) -> list[str]:
    """Why each model's sessions ended, by ending, and what the endings shown mean."""
    rows = [m for m in report.models if m.endings]
    if not rows:
        return []
    out = ["", "Endings (why each session that ran ended; core/endings.py):"]
    for m in rows:
        could = f"; {m.could_not_act} could not act (no action ran)" if m.could_not_act else ""
        out.append(f"  {m.model}: {counts(m.endings)} (not hunting {m.not_hunting} of {m.ran}{could})")
    shown = dict.fromkeys(e for m in rows for e in m.endings)
    out += [f"  {e}: {MEANING[e]}" for e in ENDINGS if e in shown]
    return out


MATRIX_MARKS = {"bug": "BUG", "rejected": "rej", "no_certificate": "-", "error": "ERR", None: "."}


def matrix_lines(report: CampaignReport) -> list[str]:
    """The task × model matrix (campaigns with tasks)."""
    matrix = report.matrix
    if not matrix:
        return []
    models = list(matrix["cells"])
    rows = [("task", *models)]
    for i, task in enumerate(matrix["tasks"]):
        rows.append((task, *(MATRIX_MARKS[matrix["cells"][m][i]] for m in models)))
    return [
        "",
        "Task × model (BUG verified/claimed bug, rej rejected, - no certificate, ERR error, . did not run):",
        *(f"  {line}" for line in table(rows)),
    ]


def prompt_text(a: ModelAudit) -> str:
    """The prompts summarised: per task one hash expected, the same for every model."""
    if not a.task_prompts:
        return "not recorded by the runner"
    p = a.prompt_summary()
    if p["tasks"] == 1 and "" in a.task_prompts:
        one = "one prompt" if p["distinct"] == 1 else f"{p['distinct']} different prompts"
        return f"{one} over {p['sessions']} sessions"
    several = f", {p['tasks_with_several']} task(s) with several" if p["tasks_with_several"] else ""
    return f"{p['tasks']} tasks, {p['distinct']} distinct prompts over {p['sessions']} sessions{several}"


def dates_text(a: ModelAudit) -> str:
    """`2026-01-05T09:00:00Z to 2026-02-03T17:12:09Z (joined 2026-02-03T09:00:00Z (runs/m))`."""
    dates = a.dates()
    shown = f"{dates['first']} to {dates['last']}" if dates else "no session started"
    return shown + (f" (joined by an extension {'; '.join(a.joined)})" if a.joined else "")


def counts(values: Counter[str], prefix: str = "") -> str:
    """`fake ×3, alt ×2`: each value with the number of sessions that had it."""
    return ", ".join(f"{prefix}{value} ×{n}" for value, n in values.most_common()) or "-"


def table(rows: list[tuple[str, ...]]) -> list[str]:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in rows]


TESTS = {"mcnemar_exact": "exact McNemar", "fisher_exact": "Fisher's exact"}


def comparison_lines(report: CampaignReport) -> list[str]:
    lines = []
    for c in report.comparisons:
        diff = f"{c.difference * 100:+.0f} pp" if c.difference is not None else "n/a"
        pairs = (
            f" over {c.pairs} task pairs (discordant {c.discordant[0]}/{c.discordant[1]})"
            if c.test == "mcnemar_exact"
            else ""
        )
        lines.append(f"  {c.a} vs {c.b} [{TESTS.get(c.test, c.test)}{pairs}]: bug rate {diff}; {c.verdict}")
    return lines


def audit_text(la: LogicalAudit) -> str:
    """`model_calls 3 ×4, …; ended by a counter 1/4, by submitting 3/4`."""
    limits = ", ".join(f"{c} {counts(values)}" for c, values in la.limits.items())
    return f"{limits}; ended by a counter {la.ended_by_counter}/{la.ran}, by submitting {la.ended_by_submit}/{la.ran}"


def logical_lines(report: CampaignReport) -> list[str]:
    """The logical budgets section (only for runs with `[budget.per_session]`)."""
    models = [(m.model, m.logical) for m in report.models if m.logical is not None]
    if not models:
        return []
    return [
        "",
        f"Logical budgets per session: {limits_line([s for _, s in models])}",
        *(f"  {row}" for row in table(table_rows(models))),
        "  per counter: the mean and max units used by the sessions that ran, and how many its limit stopped",
    ]


def campaigns_text(report: CampaignReport) -> str:
    """`Campaign month` or `Campaigns jan, feb (pooled)`; a quick trial says so."""
    names = list(dict.fromkeys(run.campaign.name for run in report.runs))
    trial = " (a quick trial)" if any(run.record.trial is not None for run in report.runs) else ""
    if len(names) == 1:
        return f"Campaign {names[0]}{trial}"
    return f"Campaigns {', '.join(names)} (pooled){trial}"


def usage_lines(report: CampaignReport) -> list[str]:
    """Each model's tokens by bucket, as they were priced (none for runs from before buckets)."""
    rows = [m for m in report.models if m.usage]
    if not rows:
        return []
    out = ["", "Tokens by bucket (each charged at its price; reasoning is part of output):"]
    for m in rows:
        u = m.usage
        out.append(
            f"  {m.model}: input {u['input']:,}, cache read {u['cache_read']:,}, cache write "
            f"{u['cache_write']:,}, output {u['output']:,} (reasoning {u['reasoning']:,})"
        )
    return out


def cache_prices(m: Model) -> str:
    """`, cache read $0.3 / write $3.75` where the campaign priced the cache apart."""
    if m.cache_read_usd_per_mtok is None and m.cache_write_usd_per_mtok is None:
        return ""
    spec = m.spec()
    return f", cache read ${spec.cache_read_price} / write ${spec.cache_write_price}"


def render(report: CampaignReport) -> str:
    runs = ", ".join(str(run.path) for run in report.runs)
    out = [f"{campaigns_text(report)} (identity {report.identity}); runs: {runs}", ""]
    out += table([COLUMNS, *(leaderboard_row(report.rank(n), m) for n, m in enumerate(report.models))])
    out += ["", ranked_by_note(report), *legend_lines()]
    out += ending_lines(report)
    out += logical_lines(report)
    out += matrix_lines(report)
    if report.shortlists is not None:
        from benchtui.report.shortlist import text as shortlist_text

        out += ["", shortlist_text(report.shortlists)]
        out.append("bugs@K: distinct rules with a bug among the first K shortlisted (K scaled to the size)")
    if report.comparisons:
        out += [
            "",
            "Pairwise (two-sided; exact McNemar on task pairs where both ran the same tasks, else Fisher's "
            "exact; p Holm-adjusted over the pairs):",
            *comparison_lines(report),
        ]
    out += usage_lines(report)
    audit = report.fairness
    out += ["", f"Fairness audit: {audit.verdict}"]
    out += [f"  - {finding}" for finding in audit.findings]
    out += [f"  note: {note}" for note in audit.notes]
    for a in audit.models:
        m = a.model
        out += [
            f"  {m.name}: price ${m.input_usd_per_mtok}/${m.output_usd_per_mtok} per Mtok in/out{cache_prices(m)}, "
            f"max_output_tokens {m.max_output_tokens}; skipped for budget {a.skipped_budget}/{a.planned}, "
            f"infrastructure errors {a.infra_errors}/{a.planned}",
            f"    runners {counts(a.runners)}; reserved {counts(a.reservations, '$')}",
            f"    environments {counts(a.environments)}",
            f"    prompts {prompt_text(a)}",
            f"    dates {dates_text(a)}",
        ]
        if a.logical is not None:
            out.append(f"    logical budgets: {audit_text(a.logical)}")
    return "\n".join(out) + "\n"
