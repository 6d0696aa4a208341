"""`benchtui check --ping`: one tiny metered call per model, as a throwaway campaign.

The ping runs through the same engine as a campaign (plan, reservations, meter, ledger, journal)
in a temporary run dir: each model gets one session of the active profile's ping runner, with
`max_output_tokens` cut to PING_MAX_TOKENS so the hold is small. It asks for one action in the
campaign's format; per model it says ok, or what is wrong in words to act on: no tool call (and
how to switch it on, or use the text format), the wrong format, a server that ignores
`max_tokens`, the key, reachability. Its cost is read back from that run's ledger and reported;
the run dir is then thrown away.
"""

from __future__ import annotations

import tempfile
from decimal import Decimal
from pathlib import Path
from typing import Any

import tomli_w
import trio

from benchtui.core.contract import Check
from benchtui.core.money import token_cost, usd
from benchtui.engine import events as ev
from benchtui.engine import run as engine
from benchtui.engine.campaign import Campaign

PING_MAX_TOKENS = 256
"""Room for one short action and a sentence before it (a model's own max_output_tokens, if lower)."""
PING_PROMPT_TOKENS = 1000  # a bound on any ping runner's prompt (the mini one authorises 300)


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items() if v is not None}
    return float(value) if isinstance(value, Decimal) else value


def throwaway_campaign(campaign: Campaign, ping_table: dict[str, Any], target: Path) -> dict[str, Any]:
    models = [
        {**_plain(m.model_dump()), "max_output_tokens": min(PING_MAX_TOKENS, m.max_output_tokens)}
        for m in campaign.models
    ]
    worst = max(
        token_cost(PING_PROMPT_TOKENS, m.spec().dearest_prompt_price)  # as the meter holds it
        + token_cost(min(PING_MAX_TOKENS, m.max_output_tokens), m.output_usd_per_mtok)
        for m in campaign.models
    )
    per_session = max(usd(worst), Decimal("1e-6"))  # a budget must be positive, even for free models
    return {
        "name": "ping",
        "sessions_per_model": 1,
        "parallelism": len(models),
        "runner": "ping",
        "budget": {"total_usd": float(per_session * len(models)), "per_session_usd": float(per_session)},
        "runners": {"ping": ping_table},
        "models": models,
        "environment": {"path": str(target)},
    }


def ping_models(campaign: Campaign) -> list[Check]:
    profile = campaign.runners[campaign.runner]
    ping_table = campaign.kind(campaign.runner).ping_profile(profile)
    if ping_table is None:
        return [Check(f"ping ({campaign.runner})", f"runner kind {profile.kind!r} cannot ping models")]
    with tempfile.TemporaryDirectory(prefix="benchtui-ping-") as tmp:
        root = Path(tmp)
        (root / "target").mkdir()
        path = root / "ping.toml"
        path.write_text(tomli_w.dumps(throwaway_campaign(campaign, ping_table, root / "target")))
        with engine.prepare(engine.Options(path, root / "runs")) as prep:
            trio.run(engine.run, prep, ev.EventBus())
        ledger = prep.checkpoint.ledger
        ends = {rec.model: rec.to_json() for rec in prep.checkpoint.journal.values()}
    checks = []
    for model in campaign.models:
        end, spent = ends.get(model.name, {}), ledger.models[model.name].spent_usd
        what, cost = f"ping {model.name}", f"(ledger: ${spent.normalize():f})"
        if end.get("state") == "done" and end.get("result") != "error":
            checks.append(Check(what, detail=f"{end.get('reason', '')} {cost}"))
        else:
            checks.append(Check(what, f"{problem_of(end)} {cost}"))
    return checks


def problem_of(end: dict[str, Any]) -> str:
    """A failed ping in words to act on: what kind of failure first (the key, reachability), as
    the circuit breaker names them, then what the provider said."""
    from benchtui.engine.breaker import KINDS

    reason = str(end.get("reason") or end.get("state", "did not run"))
    if end.get("retryable"):
        kind = next((kind for kind, pattern in KINDS if pattern.search(reason)), None)
        if kind is not None and not reason.startswith(kind.split(" (")[0]):
            return f"{kind}: {reason}"
    return reason
