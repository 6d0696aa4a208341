"""`benchtui schema`: the campaign file's JSON Schema, shaped for editors and validators.

pydantic's schema is the starting point; three changes make it useful in an editor (taplo,
VS Code's Even Better TOML, check-jsonschema):
- each `[runners.*]` table, and `[target]`, is checked against the profile its `kind` names (an
  if/then per installed kind), so a typo gets that profile's error, not "not valid under any of
  the schemas";
- money is a number (pydantic also allows any string for a Decimal: "lots of money" passed);
- `$schema` says which draft it is written in.
"""

from __future__ import annotations

import contextlib
from decimal import Decimal, InvalidOperation
from typing import Any

from pydantic import BaseModel

from benchtui.core import registry
from benchtui.core.contract import RunnerProfile
from benchtui.core.registry import Family
from benchtui.core.target import TargetProfile
from benchtui.engine.campaign import Campaign

DRAFT = "https://json-schema.org/draft/2020-12/schema"


def _profiles(family: Family[Any]) -> dict[str, type[BaseModel]]:
    """The installed kinds' profiles (a broken third-party kind must not hide the others)."""
    found = {}
    for kind in family.available():
        try:
            found[kind] = family.kind_class(kind).Profile
        except Exception:  # noqa: BLE001
            continue
    return found


def runner_table_schema(defs: dict[str, Any]) -> dict[str, Any]:
    """A `[runners.*]` table: a `kind`, then the keys of that kind's profile (added to `defs`); or
    `use`, a shipped profile or a profile file, and keys of its kind over it (checked once the
    profile is in place: `benchtui check`)."""
    from benchtui.engine.campaign.shipped import shipped

    use = {
        "type": "object",
        "required": ["use"],
        "properties": {
            "use": {
                "type": "string",
                "description": "A shipped runner profile (`benchtui runners`) or a profile file, "
                "relative to the campaign file; the table's other keys replace the profile's.",
                "examples": sorted(shipped()),
            }
        },
    }
    kinds = kind_table_schema(registry.RUNNERS, RunnerProfile, defs)
    return {"type": "object", "if": {"required": ["use"]}, "then": use, "else": kinds}


def kind_table_schema(family: Family[Any], base: type[BaseModel], defs: dict[str, Any]) -> dict[str, Any]:
    """A table of a plugin family (`[runners.*]`, `[target]`): a `kind`, then the keys of that
    kind's profile (added to `defs`)."""
    branches = []
    profiles = _profiles(family)
    for kind, profile in profiles.items():
        schema = profile.model_json_schema(ref_template="#/$defs/{model}")
        defs.update(schema.pop("$defs", {}))
        defs[profile.__name__] = schema
        branches.append(
            {
                "if": {"properties": {"kind": {"const": kind}}, "required": ["kind"]},
                "then": {"$ref": f"#/$defs/{profile.__name__}"},
            }
        )
    kind_doc = base.model_fields["kind"].description
    required = ["kind"] if base.model_fields["kind"].is_required() else []
    return {
        "type": "object",
        "required": required,
        "properties": {"kind": {"type": "string", "description": kind_doc, "examples": sorted(profiles)}},
        "allOf": branches,
    }


def _numbers_for_money(node: Any) -> Any:
    """Decimal fields: keep the number branch, drop pydantic's any-string one."""
    if isinstance(node, list):
        return [_numbers_for_money(item) for item in node]
    if not isinstance(node, dict):
        return node
    node = {key: _numbers_for_money(value) for key, value in node.items()}
    branches = node.get("anyOf")
    if isinstance(branches, list) and any(b.get("type") == "number" for b in branches):
        kept = [b for b in branches if b.get("type") != "string"]
        if len(kept) < len(branches):
            node.pop("anyOf")
            if len(kept) == 1:
                node.update(kept[0])
            else:
                node["anyOf"] = kept
            if isinstance(node.get("default"), str):
                with contextlib.suppress(InvalidOperation):
                    node["default"] = float(Decimal(node["default"]))
    return node


def json_schema() -> dict[str, Any]:
    schema = Campaign.model_json_schema(ref_template="#/$defs/{model}")
    defs = schema.setdefault("$defs", {})
    defs.pop("RunnerProfile", None)
    defs.pop("TargetProfile", None)
    schema["properties"]["runners"]["additionalProperties"] = runner_table_schema(defs)
    described = schema["properties"]["target"].get("description", "")
    schema["properties"]["target"] = {
        **kind_table_schema(registry.TARGETS, TargetProfile, defs),
        "description": described,
    }
    return {"$schema": DRAFT, **_numbers_for_money(schema)}
