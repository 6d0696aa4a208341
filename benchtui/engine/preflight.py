"""Preflight checks: the cheap part runs before every start; `benchtui check` (check.py) runs all.

Before any money is spent: the campaign validates, the target exists and is fingerprinted, each
runner profile's tools work and (full check) every task is verifiable. What a runner kind needs
is its own business: the engine asks the kind's optional `preflight` ability and knows nothing
of the target.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

from benchtui.core import workspace
from benchtui.core.contract import Check
from benchtui.core.errors import BadInput
from benchtui.engine.campaign import Campaign


def runner_checks(campaign: Campaign, name: str, tasks: list[str] | None, *, full: bool) -> list[Check]:
    """The checks the kind of runner profile `name` asks for (its `preflight`)."""
    kind = campaign.kind(name)
    found = kind.preflight(campaign.runners[name], tasks=tasks, full=full, target=campaign.target.kind)
    return [Check(f"runner {name}: {c.what}", c.problem, c.detail) for c in found]


@dataclass(frozen=True, slots=True)
class Start:
    """What a campaign start learnt before writing anything: the target's fingerprint, and the
    notes to show (warnings, limits the runner cannot enforce, a dirty checkout)."""

    fingerprint: str
    notes: list[str]


HUGE_FILES = 20_000
HUGE_BYTES = 500_000_000
"""A plain-directory target past either is named at start: e.g. `path = "."` beside a venv (~10k
files, 2.4 s to hash, and a copy per session)."""


def at_start(campaign: Campaign) -> Start:
    """Every check before a start (BadInput on a problem), in one visit: the active runner's
    tools, the campaign's warnings, the target's fingerprint."""
    cheap(campaign)  # e.g. a missing `pred`: exit 2 before anything is written
    notes = [*campaign.warnings(), *unenforced(campaign)]
    size = workspace.HashStats()
    path = campaign.environment.path
    fingerprint = workspace.fingerprint(
        path, campaign.environment.tools, cache=workspace.default_cache(), stats=size
    )
    if size.files > HUGE_FILES or size.bytes > HUGE_BYTES:
        notes.append(
            f"{path} is large ({size.files} files, {size.bytes / 1e6:.0f} MB) and is copied whole into "
            "every session: is environment.path right (a venv or build output inside it)?"
        )
    if "+dirty" in fingerprint.split()[0]:
        notes.append(
            f"{campaign.environment.path} has uncommitted changes: sessions get copies of "
            "its last commit, without them"
        )
    return Start(fingerprint, notes)


def cheap(campaign: Campaign) -> None:
    """The checks run before a campaign starts (the active profile's tools); BadInput on a problem,
    so a missing `pred` is exit 2 before any session starts, not N sessions ending in errors."""
    problems = [c for c in runner_checks(campaign, campaign.runner, None, full=False) if not c.ok]
    if problems:
        raise BadInput(f"{problems[0].what}: {problems[0].problem} (`benchtui check` checks everything)")


def unenforced(campaign: Campaign) -> list[str]:
    """A warning for each logical budget the active runner's kind cannot enforce (its optional
    `enforces` ability lists what it can; the meter enforces `model_calls` for every kind)."""
    limits = campaign.logical_limits
    if not limits:
        return []
    kind = campaign.runners[campaign.runner].kind
    can = {"model_calls", *campaign.kind(campaign.runner).enforces}
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
    return Check(f"target {path}", detail=workspace.fingerprint(path, campaign.environment.tools))
