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
    hypothesis: str = ""
    """An episode of a shortlist campaign: its triage's hypothesis for the rule (`task`)."""
    triage: bool = False
    """The triage session of a shortlist campaign (its episodes join the plan when it ends)."""


def build_plan(campaign: Campaign) -> list[PlannedSession]:
    """m1#0, m2#0, m1#1, m2#1, …: a cut-off or an outage hits every model evenly.

    A shortlist campaign starts with one triage per model (index -1); its episodes are planned
    when each triage commits (engine/shortlist.py)."""
    slugs = {m.name: slug(m.name) for m in campaign.models}
    if campaign.protocol is not None:
        return [PlannedSession(f"{s}-triage", m, -1, None, triage=True) for m, s in slugs.items()]
    tasks: list[str | None] = [*campaign.tasks] if campaign.tasks else [None]  # session i: task i mod len
    return [
        PlannedSession(f"{s}-{i:04d}", m, i, tasks[i % len(tasks)])
        for i in range(campaign.sessions_per_model_count)
        for m, s in slugs.items()
    ]
