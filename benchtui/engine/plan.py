"""The session plan: stable ids, round-robin launch order by session index (docs/design/invariants.md#f4)."""

from __future__ import annotations

from dataclasses import dataclass

from benchtui.engine.campaign import Campaign, slug

__all__ = ["PlannedSession", "build_plan", "slug"]


@dataclass(frozen=True, slots=True)
class PlannedSession:
    id: str
    model: str
    index: int
    task: str | None


def build_plan(campaign: Campaign) -> list[PlannedSession]:
    """m1#0, m2#0, m1#1, m2#1, …: a cut-off or an outage hits every model evenly."""
    models = [m.name for m in campaign.models]
    slugs = {m: slug(m) for m in models}
    return [
        PlannedSession(f"{slugs[m]}-{i:04d}", m, i, campaign.task_for(i))
        for i in range(campaign.sessions_per_model_count)
        for m in models
    ]
