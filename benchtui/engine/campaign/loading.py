"""Loading a campaign file: read it (bounded), resolve its relative paths against its folder,
apply `BENCHTUI_*` and CLI overrides, validate; every problem is one line of BadInput that names
the file or the variable at fault."""

from __future__ import annotations

import os
import re
import tomllib
from decimal import Decimal
from pathlib import Path
from typing import Any

from pydantic import ValidationError
from pydantic_settings import SettingsError

from benchtui.core import inputs, registry
from benchtui.core.errors import BadInput
from benchtui.engine.campaign.messages import first_errors
from benchtui.engine.campaign.schema import Campaign, toml_data
from benchtui.engine.campaign.tables import PriceLookup

MAX_DEPTH = 32
"""Tables and lists nested deeper are refused (deeper data would overflow later steps' recursion)."""


def load(
    path: Path, *, require_target: bool = True, prices: PriceLookup | None = None, **overrides: Any
) -> Campaign:
    """Load and validate a campaign file; every problem is a one-line BadInput.

    `require_target=False` lets `benchtui check` report a missing target among its other checks.
    `prices`: how a front end prices models the file gives no price (litellm's map); the prices
    found are validated and frozen like those the file gives."""
    try:
        text = inputs.read_text(path, inputs.CAMPAIGN_MAX_BYTES, "the campaign file")
    except FileNotFoundError:
        raise BadInput(f"{path}: no such campaign file") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise BadInput(f"{path}: malformed TOML: {exc}") from None
    except RecursionError:
        raise BadInput(f"{path}: malformed TOML: nested too deeply") from None
    if _depth(data) > MAX_DEPTH:  # deeper data would overflow the recursion of later steps
        raise BadInput(f"{path}: values nested more than {MAX_DEPTH} deep")
    _resolve_paths(data, path.parent)
    if prices is not None:
        _fill_prices(data, prices)
    token = toml_data.set(data)
    try:
        campaign = Campaign(**{k: v for k, v in overrides.items() if v is not None})
    except ValidationError as exc:
        for err in exc.errors():  # a bad BENCHTUI_* variable is the variable's fault, not the file's
            variable = _env_variable(err["loc"])
            if variable is not None:
                raise BadInput(
                    f"environment variable {variable}={os.environ[variable]!r}: "
                    f"{err['msg'].removeprefix('Value error, ')}"
                ) from None
        raise BadInput(f"{path}: {first_errors(exc, Campaign)}") from None
    except (SettingsError, RecursionError) as exc:  # a BENCHTUI_* value that is not valid JSON
        raise BadInput(_env_error(exc)) from None
    finally:
        toml_data.reset(token)
    if require_target and not campaign.environment.path.is_dir():
        what = "does not exist" if not campaign.environment.path.exists() else "is not a directory"
        raise BadInput(f"{path}: environment.path {campaign.environment.path} {what}")
    return campaign


def _fill_prices(data: dict[str, Any], prices: PriceLookup) -> None:
    """Models with neither price get the ones `prices` finds (a model with one of them keeps its
    own: the missing one is an error, as always)."""
    models = data.get("models")
    unpriced = [
        m
        for m in (models if isinstance(models, list) else [])
        if isinstance(m, dict)
        and isinstance(m.get("name"), str)
        and "input_usd_per_mtok" not in m
        and "output_usd_per_mtok" not in m
    ]
    if not unpriced:
        return
    found = prices([m["name"] for m in unpriced])
    for model in unpriced:
        keys = found.get(model["name"])
        if not isinstance(keys, dict):
            continue
        try:
            priced = {k: Decimal(str(v)) for k, v in keys.items() if k.endswith("_usd_per_mtok")}
        except ArithmeticError:
            continue
        model.update(priced, prices_from=str(keys.get("prices_from", "a price map"))[:200])


def _env_variable(loc: tuple[int | str, ...]) -> str | None:
    """The BENCHTUI_* variable that set the value at `loc` (or a table holding it), if one did."""
    names = {name.upper(): name for name in os.environ}
    keys = [str(part) for part in loc if isinstance(part, str)]
    for n in range(len(keys), 0, -1):
        found = names.get("BENCHTUI_" + "__".join(keys[:n]).upper())
        if found is not None:
            return found
    return None


def _resolve_paths(data: dict[str, Any], base: Path) -> None:
    """Relative paths in the file mean relative to the file (the frozen copy stores them absolute)."""
    tables = [(data.get("environment"), "path")]
    for table in (data.get("runners") or {}).values():
        if isinstance(table, dict) and isinstance(table.get("kind"), str):
            try:
                keys = registry.runner_class(table["kind"]).Profile.path_keys
            except (registry.UnknownRunner, AttributeError):
                continue  # reported by validation
            tables += [(table, key) for key in keys]
    target = data.get("target")
    if isinstance(target, dict) and isinstance(target.get("kind", registry.DEFAULT_TARGET), str):
        try:
            keys = registry.target_class(target.get("kind", registry.DEFAULT_TARGET)).Profile.path_keys
        except registry.UnknownKind:
            keys = ()  # reported by validation
        for key in keys:  # a target's folder defaults to the campaign file's
            target.setdefault(key, ".")
        tables += [(target, key) for key in keys]
    for table, key in tables:
        if isinstance(table, dict) and isinstance(table.get(key), str):
            table[key] = str((base / table[key]).expanduser().resolve())


def _depth(value: Any, level: int = 0) -> int:
    if level > MAX_DEPTH:
        return level
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, list):
        return max((_depth(v, level + 1) for v in value), default=level + 1)
    return level


def _env_error(exc: Exception) -> str:
    field = re.search(r'field "(\w+)"', str(exc))
    name = f"BENCHTUI_{field.group(1).upper()}" if field else "a BENCHTUI_* environment variable"
    return f"{name}: cannot parse its value (a table or list must be JSON, e.g. BENCHTUI_MODELS='[...]')"
