"""Preflight: `benchtui check CAMPAIGN.toml [--ping]`, and its cheap part before every start.

Before any money is spent: the campaign validates, the target exists and is fingerprinted, each
runner profile's tools work and (full check) every task is verifiable, with `--ping` one tiny
metered call per model (`benchtui/ping.py`). What a runner kind needs is its own business: the
engine asks the kind's optional `preflight` ability and knows nothing of the target.
"""

from __future__ import annotations

import sys
from decimal import Decimal
from pathlib import Path

from benchtui import campaign as campaign_file
from benchtui import environment
from benchtui.campaign import Campaign
from benchtui.errors import BadInput
from benchtui.money import fmt
from runners import registry
from runners.base import Check, RunnerProfile

EXIT_OK, EXIT_PROBLEMS = 0, 2


def runner_checks(name: str, profile: RunnerProfile, tasks: list[str] | None, *, full: bool) -> list[Check]:
    hook = getattr(registry.runner_class(profile.kind), "preflight", None)
    if hook is None:
        return []
    return [
        Check(f"runner {name}: {c.what}", c.problem, c.detail) for c in hook(profile, tasks=tasks, full=full)
    ]


def cheap(campaign: Campaign) -> None:
    """The checks run before a campaign starts (the active profile's tools); BadInput on a problem,
    so a missing `pred` is exit 2 before any session starts, not N sessions ending in errors."""
    problems = [
        c
        for c in runner_checks(campaign.runner, campaign.runners[campaign.runner], None, full=False)
        if not c.ok
    ]
    if problems:
        raise BadInput(f"{problems[0].what}: {problems[0].problem} (`benchtui check` checks everything)")


def worst_case(campaign: Campaign) -> dict[str, Decimal]:
    """What each model can spend at most: its sessions' full reservations, within its cap."""
    sessions = campaign.per_session_usd * campaign.sessions_per_model_count
    return {m.name: min(sessions, campaign.per_model_usd) for m in campaign.models}


def _target(campaign: Campaign) -> Check:
    path = campaign.environment.path
    if not path.exists():
        return Check(f"target {path}", "does not exist (environment.path)")
    return Check(f"target {path}", detail=environment.fingerprint(path, campaign.environment.tools))


def run_checks(campaign: Campaign, *, ping: bool) -> list[Check]:
    checks = [_target(campaign)]
    for name, profile in campaign.runners.items():
        checks += runner_checks(name, profile, campaign.tasks, full=True)
    if ping:
        from benchtui import ping as pinging

        checks += pinging.ping_models(campaign)
    return checks


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
    from benchtui.cli import ArgumentParser

    p = ArgumentParser(prog="benchtui check", description=main_check.__doc__)
    p.add_argument("campaign", type=Path, help="campaign TOML file")
    p.add_argument("--ping", action="store_true", help="one tiny metered call per model (costs a little)")
    args = p.parse_args(argv)
    campaign = campaign_file.load(args.campaign, require_target=False)  # BadInput: one line, exit 2
    checks = run_checks(campaign, ping=args.ping)
    print(table(campaign, checks))
    for warning in campaign.warnings():
        print(f"warning: {warning}")
    problems = [c for c in checks if not c.ok]
    for c in problems:
        print(f"benchtui check: {c.what}: {c.problem}", file=sys.stderr)
    return EXIT_PROBLEMS if problems else EXIT_OK
