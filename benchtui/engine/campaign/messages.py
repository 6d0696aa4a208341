"""A validation error of the campaign file as one line: every problem as `where: what`, an unknown
key with the known key it may be a typo of."""

from __future__ import annotations

import difflib
from typing import Any, get_args, get_origin

from pydantic import BaseModel, ValidationError

from benchtui.core import registry


def first_errors(exc: ValidationError, model: type[BaseModel] | None) -> str:
    """Every error as `where: what`; an unknown key says which key of `model` (the table the
    locations start at) it may be a typo of."""
    parts = []
    for err in exc.errors():
        where = ".".join(str(p) for p in err["loc"])
        msg = err["msg"].removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":
            msg = "unknown key" + (_did_you_mean(model, err["loc"]) if model else "")
        said = not where or msg.startswith((f"{where}.", f"{where}:"))  # a nested table's own message
        parts.append(msg if said else f"{where}: {msg}")
    return "; ".join(parts)


def profile_class(table: dict[str, Any]) -> type[BaseModel] | None:
    """The Profile of a `[runners.*]` table's kind (None: an unknown kind, reported as such)."""
    try:
        return registry.runner_class(str(table.get("kind"))).Profile
    except registry.UnknownRunner:
        return None


def target_class(table: dict[str, Any]) -> type[BaseModel] | None:
    """The Profile of a `[target]` table's kind (None: an unknown kind, reported as such)."""
    try:
        return registry.target_class(str(table.get("kind", registry.DEFAULT_TARGET))).Profile
    except registry.UnknownKind:
        return None


def _did_you_mean(model: type[BaseModel], loc: tuple[int | str, ...]) -> str:
    """` (did you mean `key`?)` for the known key of the table at `loc` closest to its last part."""
    table: type[BaseModel] | None = model
    skip = 0
    for part in loc[:-1]:
        if skip:  # a list index or a table's own key name (runners.<name>, tools.<prefix>)
            skip -= 1
            continue
        field = table.model_fields.get(str(part)) if table else None
        if field is None:
            return ""
        table, skip = _table_of(field.annotation)
    if table is None or not loc:
        return ""
    close = difflib.get_close_matches(str(loc[-1]), list(table.model_fields), n=1, cutoff=0.6)
    return f" (did you mean `{close[0]}`?)" if close else ""


def _table_of(annotation: Any) -> tuple[type[BaseModel] | None, int]:
    """The model a field's values are validated by, and how many loc parts sit between (list
    indexes, dict keys)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation, 0
    origin, args = get_origin(annotation), get_args(annotation)
    if origin in (list, tuple, dict) and args:
        inner, skip = _table_of(args[-1])
        return inner, skip + 1
    for arg in args:  # X | None
        inner, skip = _table_of(arg)
        if inner is not None:
            return inner, skip
    return None, 0
