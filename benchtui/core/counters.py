"""Logical budget counters as people read them: one short line per session (`calls 3/10  actions
5/12  pred 7/24  pred solve 2/10  submits 0/2`), shared by the TUI, `ctl status` and the report.

Counter names are the flat ones of `benchtui.core.contract.LogicalLimits.counters` (`model_calls`,
`tools.pred solve`); the journal's end lines nest the tool counts under "tools" (`flat` undoes it).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from benchtui.core.contract import TOOLS, LogicalLimits

LABELS = {"model_calls": "calls", "shell_actions": "actions", "submits": "submits"}
ORDER = {"model_calls": 0, "shell_actions": 1, "submits": 3}
"""The protocol's order (M, E, P, S): tool counters sit between actions and submits."""

Usage = tuple[tuple[str, int, int], ...]
"""(counter, used, limit) of each counter with a limit, as `SessionProgress.counters` has them."""


def label(counter: str) -> str:
    """`calls` for model_calls, the command prefix for a tool counter (`pred solve`)."""
    return counter.removeprefix(TOOLS) if counter.startswith(TOOLS) else LABELS.get(counter, counter)


def ordered(counters: Iterable[str]) -> list[str]:
    return sorted(counters, key=lambda c: (ORDER.get(c, 2), c))


def flat(nested: Mapping[str, Any] | None) -> dict[str, int]:
    """`{"model_calls": 3, "tools": {"pred": 5}}` (a journal end line) as `{"model_calls": 3,
    "tools.pred": 5}`."""
    out: dict[str, int] = {}
    for name, value in (nested or {}).items():
        if name == "tools" and isinstance(value, Mapping):
            out.update({TOOLS + prefix: n for prefix, n in value.items() if isinstance(n, int)})
        elif isinstance(value, int):
            out[name] = value
    return out


def nest(used: Mapping[str, int], counters: list[str]) -> dict[str, Any]:
    """`flat` undone, for a journal end line: every counter with a limit appears, 0 if unused."""
    out: dict[str, Any] = {}
    for name in sorted(set(counters) | set(used)):
        if name.startswith(TOOLS):
            out.setdefault("tools", {})[name.removeprefix(TOOLS)] = used.get(name, 0)
        else:
            out[name] = used.get(name, 0)
    return out


def usage(used: Mapping[str, int], limits: LogicalLimits) -> Usage:
    """Every counter with a limit, with the units `used` has of it (0 if none)."""
    return tuple((c, used.get(c, 0), limits.limit(c) or 0) for c in ordered(limits.counters))


def line(counters: Usage, exhausted: Iterable[str] = ()) -> str:
    """`calls 3/10  pred 7/24`, plus which counters refused a unit (`spent: calls`)."""
    text = "  ".join(f"{label(c)} {used}/{limit}" for c, used, limit in ordered_usage(counters))
    spent = [label(c) for c in exhausted]
    return text + (f"  (spent: {', '.join(spent)})" if spent else "")


def ordered_usage(counters: Usage) -> Usage:
    rank = {c: i for i, c in enumerate(ordered(c for c, _, _ in counters))}
    return tuple(sorted(counters, key=lambda item: rank[item[0]]))
