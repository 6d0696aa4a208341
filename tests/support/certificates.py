"""Certificates the tests build themselves, in the target benchmark's shape (no copies of its
files): an `unsound_extraction` claim on MaximumIndependentSet → MaximumClique of the path
0-1-2, and the same claim with a bundle whose target `pred reduce` would never produce."""

from __future__ import annotations

from itertools import combinations
from pathlib import Path
from typing import Any

from support import ROOT

SHARED_CONTRACTS = ROOT.parent / "shared" / "contracts"
"""The benchmark's own files, where a checkout sits beside them (CI does); tests reading them skip
with a reason elsewhere."""

UNIT = {"graph": "SimpleGraph", "weight": "One"}
RULE = "MaximumIndependentSetToMaximumClique"


def problem(kind: str, n: int, edges: list[list[int]]) -> dict[str, Any]:
    return {
        "type": kind,
        "variant": dict(UNIT),
        "data": {"graph": {"num_vertices": n, "edges": edges}, "weights": [1] * n},
    }


def complement(n: int, edges: list[list[int]]) -> list[list[int]]:
    present = {tuple(sorted(e)) for e in edges}
    return [[a, b] for a, b in combinations(range(n), 2) if (a, b) not in present]


def example(target_edges: list[list[int]] | None = None, note: str | None = None) -> dict[str, Any]:
    """The claim: target config [1,0,0] of the clique maps back to [1,1,0], not independent.
    (Replayed with pred, the round trip recovers the optimum: a strict verifier rejects it.)"""
    n, edges = 3, [[0, 1], [1, 2]]
    source = problem("MaximumIndependentSet", n, edges)
    target = problem("MaximumClique", n, complement(n, edges) if target_edges is None else target_edges)
    return {
        "rule": RULE,
        "source": source,
        "bundle": {
            "path": [
                {"name": "MaximumIndependentSet", "variant": dict(UNIT)},
                {"name": "MaximumClique", "variant": dict(UNIT)},
            ],
            "source": source,
            "target": target,
        },
        "violation": "unsound_extraction",
        "target_config": "1,0,0",
        "claimed_source_solution": [1, 1, 0],
        "note": note
        or "A buggy extract_solution maps target config [1,0,0] back to [1,1,0] in source space; "
        "vertices 0 and 1 are adjacent, so it is not an independent set.",
    }


def wrong_target() -> dict[str, Any]:
    """The claim with edge [0,1] added to the clique target: pred reduce only makes [0,2]."""
    return example([[0, 1], [0, 2]], note="The bundle's target was tampered with: edge [0,1] added.")


CERTIFICATES = {"certificate.example.json": example, "certificate.wrong-target.json": wrong_target}


def certificate(name: str) -> dict[str, Any]:
    """A certificate by the name the benchmark's contracts gave it."""
    return CERTIFICATES[name]()


def write(directory: Path, name: str) -> Path:
    import json

    path = directory / name
    path.write_text(json.dumps(certificate(name), indent=1))
    return path
