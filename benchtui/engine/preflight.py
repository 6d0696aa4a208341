"""Preflight checks: the cheap part runs before every start; `benchtui check` (check.py) runs all.

Before any money is spent: the campaign validates, the target exists and is fingerprinted, each
runner profile's tools work and (full check) every task is verifiable. What a runner kind needs
is its own business: the engine asks the kind's optional `preflight` ability and knows nothing
of the target.
"""

from __future__ import annotations

from decimal import Decimal

from benchtui.core import registry
from benchtui.core import workspace as environment
from benchtui.core.contract import Check, LogicalLimits, RunnerProfile
from benchtui.core.errors import BadInput
from benchtui.engine.campaign import Campaign


def runner_checks(name: str, profile: RunnerProfile, tasks: list[str] | None, *, full: bool) -> list[Check]:
    hook = getattr(registry.runner_class(profile.kind), "preflight", None)
    if hook is None:
        return []
    return [
        Check(f"runner {name}: {c.what}", c.problem, c.detail) for c in hook(profile, tasks=tasks, full=full)
    ]


def limit_checks(name: str, profile: RunnerProfile, limits: LogicalLimits) -> list[Check]:
    """The kind's optional `check_limits(profile, limits)` ability: a logical budget it could not
    enforce as written (e.g. a counted tool its sandbox shows anyway) is refused at load."""
    hook = getattr(registry.runner_class(profile.kind), "check_limits", None)
    if hook is None or not limits:
        return []
    return [Check(f"runner {name}: {c.what}", c.problem, c.detail) for c in hook(profile, limits)]


def cheap(campaign: Campaign) -> None:
    """The checks run before a campaign starts (the active profile's tools); BadInput on a problem,
    so a missing `pred` is exit 2 before any session starts, not N sessions ending in errors."""
    profile = campaign.runners[campaign.runner]
    problems = [c for c in runner_checks(campaign.runner, profile, None, full=False) if not c.ok]
    problems += [c for c in limit_checks(campaign.runner, profile, campaign.logical_limits) if not c.ok]
    if problems:
        raise BadInput(f"{problems[0].what}: {problems[0].problem} (`benchtui check` checks everything)")


def unenforced(campaign: Campaign) -> list[str]:
    """A warning for each logical budget the active runner's kind cannot enforce (its optional
    `enforces` ability lists what it can; the meter enforces `model_calls` for every kind)."""
    limits = campaign.logical_limits
    if not limits:
        return []
    kind = campaign.runners[campaign.runner].kind
    can = {"model_calls", *getattr(registry.runner_class(kind), "enforces", ())}
    if campaign.executor.remote:  # the tool gate is a unix socket of this machine
        can.discard("tools")
    named = [*limits.counters, *(["observation_chars"] if limits.observation_chars else [])]
    missing = [c for c in named if c not in can and not (c.startswith("tools.") and "tools" in can)]
    if not missing:
        return []
    where = " on a Ray cluster" if campaign.executor.remote else ""
    return [
        f"runner {campaign.runner} ({kind}){where} cannot enforce {', '.join(missing)}: those limits "
        "are not applied to its sessions (the same for every model)"
    ]


def worst_case(campaign: Campaign) -> dict[str, Decimal]:
    """What each model can spend at most: its sessions' full reservations, within its cap."""
    sessions = campaign.per_session_usd * campaign.sessions_per_model_count
    return {m.name: min(sessions, campaign.per_model_usd) for m in campaign.models}


def target_check(campaign: Campaign) -> Check:
    path = campaign.environment.path
    if not path.exists():
        return Check(f"target {path}", "does not exist (environment.path)")
    return Check(f"target {path}", detail=environment.fingerprint(path, campaign.environment.tools))
