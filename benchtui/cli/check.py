"""`benchtui check CAMPAIGN.toml [--ping]`: every preflight check, with `--ping` one tiny metered
call per model (ping.py), as a table; exit 0, or 2 with one line per problem."""

from __future__ import annotations

import sys
from decimal import Decimal
from pathlib import Path

from benchtui.cli.args import OneLineParser
from benchtui.core.contract import Check
from benchtui.core.money import fmt
from benchtui.engine import campaign as campaign_file
from benchtui.engine.campaign import Campaign
from benchtui.engine.preflight import (
    endpoint_checks,
    key_checks,
    runner_checks,
    runner_notes,
    target_check,
    unenforced,
    worst_case,
)

EXIT_OK, EXIT_PROBLEMS = 0, 2


def run_checks(campaign: Campaign, *, ping: bool) -> list[Check]:
    target = campaign.make_target()
    checks = [target_check(campaign, target), *inventory_check(campaign)]
    for runner in campaign.profiles.values():
        checks += runner_checks(runner, tasks=campaign.tasks, full=True, target=target)
    # Keys and endpoints of every profile that calls a model API (each once).
    models = [m.spec() for m in campaign.models]
    calling = [p for p in campaign.runners.values() if p.calls_model_api]
    for check in [c for p in calling for c in key_checks(models, p)]:
        if check not in checks:
            checks.append(check)
    for runner in campaign.profiles.values():
        checks += [c for c in runner.kind.model_checks(runner.profile, models) if c not in checks]
    if calling:
        checks += endpoint_checks(models, calling[0])
    if ping:
        from benchtui.cli import ping as pinging

        checks += pinging.ping_models(campaign)
    return checks


def inventory_check(campaign: Campaign) -> list[Check]:
    """A shortlist campaign: the rule inventory its triages choose from."""
    if campaign.protocol is None:
        return []
    from benchtui.core.errors import BadInput
    from benchtui.engine import shortlist

    try:
        size = campaign.protocol.shortlist_size
        target = campaign.make_target()
        rules = shortlist.inventory_of(
            campaign.profiles, campaign.runner, target, campaign.environment.path, size
        )
    except BadInput as exc:
        return [Check("rule inventory", str(exc))]
    size = campaign.protocol.shortlist_size
    return [Check("rule inventory", detail=f"{len(rules)} rules; each triage commits {size}")]


def table(campaign: Campaign, checks: list[Check]) -> str:
    width = max(len(c.what) for c in checks) + 2
    lines = [f"{'check':<{width}}result", "-" * (width + 40)]
    lines += [
        f"{c.what:<{width}}{'ok' if c.ok else 'PROBLEM'}: {c.detail if c.ok else c.problem}" for c in checks
    ]
    sessions = campaign.sessions_per_model_count
    lines += [
        "",
        f"{'model':<40}{'worst case':>12}{'cap':>12}   ({sessions} sessions × {fmt(campaign.per_session_usd)})",
    ]
    for model, amount in worst_case(campaign).items():
        lines.append(f"{model:<40}{fmt(amount):>12}{fmt(campaign.per_model_usd):>12}")
    total = sum(worst_case(campaign).values(), Decimal(0))
    lines.append(
        f"{'total':<40}{fmt(min(total, campaign.budget.total_usd)):>12}{fmt(campaign.budget.total_usd):>12}"
    )
    return "\n".join(lines)


def main_check(argv: list[str]) -> int:
    """Check a campaign before spending money; exit 0, or 2 with one line per problem."""
    p = OneLineParser(prog="benchtui check", description=main_check.__doc__)
    p.add_argument("campaign", type=Path, help="campaign TOML file")
    p.add_argument("--ping", action="store_true", help="one tiny metered call per model (costs a little)")
    args = p.parse_args(argv)
    from benchtui.runners.mini import prices  # litellm's map, for a model the file gives no price

    # BadInput: one line, exit 2
    campaign = campaign_file.load(args.campaign, require_target=False, prices=prices.lookup)
    checks = run_checks(campaign, ping=args.ping)
    print(table(campaign, checks))
    active = campaign.profiles[campaign.runner]
    for warning in [
        *campaign.warnings(),
        *unenforced(active, campaign.logical_limits, remote=campaign.executor.remote),
        *runner_notes(active),
    ]:
        print(f"warning: {warning}")
    problems = [c for c in checks if not c.ok]
    for c in problems:
        print(f"benchtui check: {c.what}: {c.problem}", file=sys.stderr)
    return EXIT_PROBLEMS if problems else EXIT_OK
