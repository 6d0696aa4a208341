"""The campaign file: its tables and the whole (`schema`), its identity (`identity`), loading it
with one-line errors (`loading`). What the rest of benchtui uses is importable from here."""

from benchtui.engine.campaign.identity import identity_digest
from benchtui.engine.campaign.loading import load
from benchtui.engine.campaign.schema import Campaign, ResolvedProfile
from benchtui.engine.campaign.tables import (
    Budget,
    Environment,
    Model,
    PerSession,
    Protocol,
    Provider,
    TriageBudget,
    Ui,
    default_target,
    slug,
)

__all__ = [
    "Budget",
    "Campaign",
    "Environment",
    "Model",
    "PerSession",
    "Protocol",
    "Provider",
    "ResolvedProfile",
    "TriageBudget",
    "Ui",
    "default_target",
    "identity_digest",
    "load",
    "slug",
]
