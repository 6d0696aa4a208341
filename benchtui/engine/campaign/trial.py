"""A quick trial of a campaign (`--limit N`, `--models a,b`): the campaign cut down to some models
and at most N sessions each, every session given exactly what the full campaign would give it
(its money and logical budgets, the environment, the runner), so a trial shows how the campaign
will run. The run records the cut in its identity: a trial is never mistaken for the full run.
"""

from __future__ import annotations

import difflib
from typing import Any

from benchtui.core.errors import BadInput
from benchtui.engine.campaign.schema import Campaign
from benchtui.engine.identity_file import Trial
from benchtui.engine.providers import provider_of


def cut(campaign: Campaign, trial: Trial) -> Campaign:
    """The campaign of the trial; BadInput naming a model the campaign does not have."""
    models = campaign.models
    if trial.models is not None:
        known = [m.name for m in campaign.models]
        for name in trial.models:
            if name not in known:
                close = difflib.get_close_matches(name, known, n=1)
                hint = f" (did you mean {close[0]!r}?)" if close else ""
                raise BadInput(
                    f"--models: no model {name!r} in campaign {campaign.name}{hint}; its models: "
                    + ", ".join(known)
                )
        models = [m for m in campaign.models if m.name in trial.models]  # the campaign's order
    values: dict[str, Any] = {name: getattr(campaign, name) for name in type(campaign).model_fields}
    values["models"] = models
    going = {provider_of(m.name, m.api_base) for m in models}
    values["providers"] = {p: v for p, v in campaign.providers.items() if p.rstrip("/") in going}
    cap = campaign.per_model_usd
    values["budget"] = campaign.budget.model_copy(
        update={
            "per_model_usd": cap,  # what the full campaign gives each model and each session
            "per_session_usd": campaign.per_session_usd,
            "total_usd": min(campaign.budget.total_usd, cap * len(models)),
        }
    )
    if trial.limit is not None:
        values.update(_limited(campaign, trial.limit))
    return Campaign.model_validate(values)  # validated as a campaign file is (no settings sources)


def _limited(campaign: Campaign, limit: int) -> dict[str, Any]:
    """At most `limit` sessions per model: the first ones of the full campaign's plan (its first
    tasks, whole repeats of every task, or the first shortlisted rules)."""
    if campaign.protocol is not None:
        size = min(limit, campaign.protocol.shortlist_size)
        return {"protocol": campaign.protocol.model_copy(update={"shortlist_size": size})}
    if campaign.tasks is None:
        assert campaign.sessions_per_model is not None
        return {"sessions_per_model": min(limit, campaign.sessions_per_model)}
    tasks, repeats = campaign.tasks, campaign.repeats
    if limit >= len(tasks) * repeats:
        return {}
    if limit <= len(tasks):
        return {"tasks": tasks[:limit], "repeats": 1}
    return {"repeats": limit // len(tasks)}
