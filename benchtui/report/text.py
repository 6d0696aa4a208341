"""The report as plain text (the default of `benchtui report`), and the cells the TUI shares."""

from __future__ import annotations

from collections import Counter
from decimal import Decimal

from benchtui.core.money import fmt
from benchtui.report import CampaignReport
from benchtui.report.leaderboard import ModelStats
from benchtui.report.logical import LogicalAudit, limits_line, table_rows
from benchtui.report.stats import Rate

COLUMNS = (
    "#",
    "model",
    "ran/planned",
    "bugs",
    "bug rate [95% CI]",
    "certs c/r/i/u",
    "spent",
    "wasted",
    "$/bug",
    "tokens",
    "wall med/p90",
)


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
        m.model,
        f"{m.ran}/{m.planned}",
        str(m.verified_bugs),
        rate_text(m.bug_rate),
        f"{c['confirmed']}/{c['rejected']}/{c['inconclusive']}/{c['unverified']}",
        fmt(m.spent_usd),
        fmt(m.wasted_usd),
        money_or_dash(m.usd_per_verified_bug),
        f"{m.tokens:,}",
        f"{seconds(m.wall_s['median'])}/{seconds(m.wall_s['p90'])}",
    )


def counts(values: Counter[str], prefix: str = "") -> str:
    """`fake ×3, alt ×2`: each value with the number of sessions that had it."""
    return ", ".join(f"{prefix}{value} ×{n}" for value, n in values.most_common()) or "-"


def table(rows: list[tuple[str, ...]]) -> list[str]:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in rows]


def comparison_lines(report: CampaignReport) -> list[str]:
    lines = []
    for c in report.comparisons:
        diff = f"{c.difference * 100:+.0f} pp" if c.difference is not None else "n/a"
        lines.append(f"  {c.a} vs {c.b}: bug rate {diff}; {c.verdict}")
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


def render(report: CampaignReport) -> str:
    runs = ", ".join(str(run.path) for run in report.runs)
    out = [f"Campaign {report.runs[0].campaign.name} (identity {report.identity}); runs: {runs}", ""]
    out += table([COLUMNS, *(leaderboard_row(n, m) for n, m in enumerate(report.models, 1))])
    out += [
        "",
        "bugs: verified distinct-rule bugs; bug rate: sessions with a confirmed bug / sessions that ran",
    ]
    out += logical_lines(report)
    if report.shortlists is not None:
        from benchtui.report.shortlist import text as shortlist_text

        out += ["", shortlist_text(report.shortlists)]
        out.append("bugs@K: distinct rules with a bug among the first K shortlisted (K scaled to the size)")
    if report.comparisons:
        out += ["", "Pairwise, Fisher's exact test (two-sided, per pair):", *comparison_lines(report)]
    audit = report.fairness
    out += ["", f"Fairness audit: {audit.verdict}"]
    out += [f"  - {finding}" for finding in audit.findings]
    for a in audit.models:
        m = a.model
        out += [
            f"  {m.name}: price ${m.input_usd_per_mtok}/${m.output_usd_per_mtok} per Mtok in/out, "
            f"max_output_tokens {m.max_output_tokens}; skipped for budget {a.skipped_budget}/{a.planned}, "
            f"infrastructure errors {a.infra_errors}/{a.planned}",
            f"    runners {counts(a.runners)}; reserved {counts(a.reservations, '$')}",
            f"    environments {counts(a.environments)}",
            f"    prompts {counts(a.prompts) if a.prompts else 'not recorded by the runner'}",
        ]
        if a.logical is not None:
            out.append(f"    logical budgets: {audit_text(a.logical)}")
    return "\n".join(out) + "\n"
