"""`benchtui runners`: the runner profiles shipped with benchtui (`runners/`), what each needs, and
whether it would run on this machine."""

from __future__ import annotations

import json

from benchtui.cli.args import OneLineParser
from benchtui.engine.campaign.shipped import Shipped, shipped

EXIT_OK = 0


def rows(profiles: dict[str, Shipped]) -> list[dict[str, object]]:
    return [
        {
            "name": p.name,
            "kind": p.kind,
            "description": p.description,
            "program": p.program,
            "keys": list(p.keys),
            "extra": p.extra,
            "install": p.install,
            "missing_here": p.here(),
        }
        for p in profiles.values()
    ]


def here_lines(profiles: dict[str, Shipped]) -> list[str]:
    """One line per shipped profile: whether it would run here, else what this machine lacks."""
    width = max((len(name) for name in profiles), default=0) + 2
    out = []
    for p in profiles.values():
        missing = p.here()
        said = "would run here" if not missing else f"not here: {'; '.join(missing)} ({p.install})"
        out.append(f"{p.name:<{width}}{said}")
    return out


def main(argv: list[str]) -> int:
    """List the shipped runner profiles a campaign names with `[runners.<name>] use = "NAME"`."""
    p = OneLineParser(prog="benchtui runners", description=main.__doc__)
    p.add_argument("--format", choices=("text", "json"), default="text")
    args = p.parse_args(argv)
    profiles = shipped()
    if args.format == "json":
        print(json.dumps(rows(profiles), indent=2))
        return EXIT_OK
    width = max((len(name) for name in profiles), default=4) + 2
    print(f"{'name':<{width}}{'kind':<16}{'program':<10}{'extra':<7}{'keys':<10}description")
    for shown in profiles.values():
        keys = ", ".join(shown.keys) or "-"
        print(
            f"{shown.name:<{width}}{shown.kind:<16}{shown.program or '-':<10}"
            f"{shown.extra or '-':<7}{keys:<10}{shown.description}"
        )
    print("\nhere:")
    for line in here_lines(profiles):
        print(f"  {line}")
    return EXIT_OK
