"""Prices for models the campaign gives none: litellm's price map, read offline, once per start.

A `[[models]]` entry without `input_usd_per_mtok` and `output_usd_per_mtok` is priced from
litellm's bundled map (`LITELLM_LOCAL_MODEL_COST_MAP=True`: never the network), its cache prices
too where the map has them; `prices_from` records which map, and the prices are frozen into the
run's campaign copy and its identity (a resume compares them; a newer map is a re-pricing, refused).
The front end passes `lookup` to the loader; the engine never imports litellm, and this asks it in
a child process (`python -m`), only when some model has no price.
"""

from __future__ import annotations

import json
import sys
from decimal import Decimal
from typing import Any

from benchtui.runners.mini.ask import ask_litellm

KEYS = {
    "input_cost_per_token": "input_usd_per_mtok",
    "output_cost_per_token": "output_usd_per_mtok",
    "cache_read_input_token_cost": "cache_read_usd_per_mtok",
    "cache_creation_input_token_cost": "cache_write_usd_per_mtok",
}
"""litellm's per-token prices -> the campaign's per-million keys."""


def lookup(names: list[str]) -> dict[str, dict[str, Any]]:
    """For each name litellm's map prices (input and output both), the campaign keys to add (as
    strings of exact decimals, plus `prices_from`); the others are left out. Empty when litellm
    is not installed or cannot be asked: the campaign then needs its prices, as before."""
    if not names:
        return {}
    found = ask_litellm("benchtui.runners.mini.prices", names)
    return found if isinstance(found, dict) else {}


def per_mtok(per_token: Any) -> str | None:
    """A per-token price as an exact per-million decimal string (None: not a sane price)."""
    if isinstance(per_token, bool) or not isinstance(per_token, int | float) or not 0 <= per_token < 1:
        return None
    return format((Decimal(repr(per_token)) * 1_000_000).normalize(), "f")


def _priced(names: list[str]) -> dict[str, dict[str, Any]]:
    from importlib.metadata import version

    import litellm

    source = f"litellm {version('litellm')} price map"
    out: dict[str, dict[str, Any]] = {}
    for name in names:
        try:
            info = litellm.get_model_info(name)
        except Exception:  # not in the map
            continue
        keys = {ours: per_mtok(info.get(theirs)) for theirs, ours in KEYS.items()}
        if keys["input_usd_per_mtok"] is None or keys["output_usd_per_mtok"] is None:
            continue
        out[name] = {k: v for k, v in keys.items() if v is not None} | {"prices_from": source}
    return out


if __name__ == "__main__":
    print(json.dumps(_priced(json.loads(sys.stdin.read()))), flush=True)
