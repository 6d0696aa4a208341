"""A campaign's identity: everything that makes its sessions comparable, as a short hash per part.

The run dir stores the digest (`identity.json`) and `--resume` refuses when a part changed, so
a part is spelled exactly as the release that wrote the oldest run dir still read today spelled
it: a key added later is left out at its default, a runner kind in its old spelling
(`registry.identity_spelling`), numbers one way. Each such clause says which runs it keeps
(tests/fixtures/rundirs/ holds run dirs of earlier releases; their identities must not move).
What is not here is free to change on resume: parallelism, the executor, the UI, the active runner.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from decimal import Decimal
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from benchtui.core import registry
from benchtui.core.contract import RunnerProfile
from benchtui.engine.campaign.tables import Model


def identity_parts(
    *,
    models: Sequence[Model],
    sessions: Mapping[str, Any],
    budget: BaseModel,
    runners: Mapping[str, RunnerProfile],
    environment: str,
    target: Mapping[str, Any] | None,
    protocol: BaseModel | None,
) -> dict[str, Any]:
    """The parts of the identity, JSON-able (`environment`: the target's fingerprint; `target`:
    its `[target]` table, None for the default)."""
    parts: dict[str, Any] = _canonical(
        {
            "models": [m.identity() for m in models],
            "sessions": dict(sessions),
            "budget": _budget_identity(budget),
            "runners": {
                n: {**_profile_identity(p), "kind": registry.identity_spelling(p.kind)}
                for n, p in sorted(runners.items())
            },
            "environment": environment,
        }
    )
    if target is not None:  # the default target: the identity of older campaigns stays what it was
        # A kind with no key of its own is named alone (as `none` always was).
        parts["target"] = target["kind"] if len(target) == 1 else _canonical(dict(target))
    if protocol is not None:  # campaigns without one keep the identity they had
        parts["protocol"] = _canonical(protocol.model_dump())
    return parts


def identity_digest(parts: dict[str, Any]) -> dict[str, str]:
    """A short hash per identity part (stored in the run dir, compared on resume)."""
    return {
        key: hashlib.sha256(json.dumps(value, sort_keys=True).encode()).hexdigest()[:16]
        for key, value in parts.items()
    }


def _profile_identity(profile: RunnerProfile) -> dict[str, Any]:
    """A runner profile's keys; one its kind added later, at the default that older runs had, is
    left out (`RunnerProfile.added_later`: mini-swe-agent's action_format)."""
    data = profile.model_dump()
    for key, default in profile.added_later.items():
        if data.get(key) == default:
            del data[key]
    return data


def _budget_identity(budget: BaseModel) -> dict[str, Any]:
    data = budget.model_dump()
    if data["per_session"] is None:  # the identity of campaigns without one stays what it was
        del data["per_session"]
    else:  # keys added later, at their defaults: the identity stays what it was
        for key, default in (("free", []), ("keep_hunting", False)):
            if data["per_session"].get(key) == default:
                del data["per_session"][key]
    return data


def _canonical(value: Any) -> Any:
    """JSON-able, with numbers spelled one way (0.20 == 0.2, 3 == 3.0) so equal means equal."""
    if isinstance(value, dict):
        return {str(k): _canonical(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_canonical(v) for v in value]
    if isinstance(value, float | int) and not isinstance(value, bool):
        value = Decimal(repr(value))
    if isinstance(value, Decimal):
        return format(value.normalize(), "f")
    if isinstance(value, Path):
        return str(value)
    return value
