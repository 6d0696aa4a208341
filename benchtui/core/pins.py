"""A Top50 run's label: `rankable` by the benchmark's rule, or a local variant of it.

The runner's own `rankable` flag is structural (its code path, ledgers, prompt id as its own
checkout has it): it does not compare the run's pins with the round's. The benchmark publishes a round's pins as its `VERSION`
(v0.6.0 at 672b214), the problem-reductions tag its image builds (`docker/Dockerfile`'s `PR_REF`,
the same by policy), and what that tag resolved to, baked into the image as
`benchmark/PINNED_COMMIT` and `PINNED_VERSION` (read by `env_setup.pinned_commit()`; its
fallback literal is the commit of v0.6.0). Only `backend_score --official` compares the library
commit, and nothing compares pred. So the label comes from here: a run is `rankable` only when
its flag is true and its library commit, pred version and prompt id equal the published ones
(a checkout whose prompt was edited makes another prompt id); otherwise it is
`local:<commit>/<pred version>` (the board, which admits no label key, shows such a run by
its `library_commit` and `pred_version`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from benchtui.core import inputs
from benchtui.core.errors import BadInput
from benchtui.core.submission import Submission


@dataclass(frozen=True, slots=True)
class Pins:
    """What a round of the benchmark pins: the library commit and the pred version (and the
    frozen prompt: `prompt_id`, the sha256 of its agent_config.yaml; empty: not checked)."""

    library_commit: str
    pred_version: str
    round: str = ""
    """The benchmark's VERSION that publishes them (v0.6.0)."""
    prompt_id: str = ""


PUBLISHED = {
    "v0.6.0": Pins(
        "aa2d1a10cffa434871d12a4d6f411147fb7e08a8",
        "0.6.0",
        "v0.6.0",
        "4694b1f0f4970554976a02fb3134e107eabac166f511f5d4d5ae1cb953fdbd67",
    ),
}
"""The rounds this benchtui knows, by the benchmark's VERSION (its 672b214 publishes v0.6.0:
problem-reductions tag v0.6.0, pred 0.6.0; its prompt is the id the scorer expects)."""
CURRENT = PUBLISHED["v0.6.0"]
RANKABLE = "rankable"
_HEX = re.compile(r"[0-9a-f]{7,64}")


def of_checkout(checkout: Path) -> Pins:
    """The pins a benchmark checkout publishes: the image's baked PINNED_COMMIT / PINNED_VERSION
    where they are (an image's /app, a checkout someone built one in), else those of its VERSION."""
    try:
        version = inputs.read_text(checkout / "VERSION", 4096, "the benchmark's VERSION").strip()
    except FileNotFoundError:
        raise BadInput(f"{checkout}: not a checkout of the benchmark (no VERSION)") from None
    baked = [_baked(checkout / "benchmark" / name) for name in ("PINNED_COMMIT", "PINNED_VERSION")]
    prompt = _prompt_id(checkout)
    known = PUBLISHED.get(version)
    if baked[0] and baked[1]:
        return Pins(baked[0], baked[1], version, prompt)
    if known is None:
        rounds = ", ".join(PUBLISHED)
        raise BadInput(
            f"{checkout}: benchmark round {version[:40]!r} is unknown to this benchtui (it knows {rounds})"
        )
    return Pins(baked[0] or known.library_commit, baked[1] or known.pred_version, version, prompt)


def _prompt_id(checkout: Path) -> str:
    """The frozen prompt's id as the checkout's scorer computes it (`expected_prompt_id`)."""
    try:
        return inputs.sha256(checkout / "benchmark" / "agent_config.yaml", "the benchmark's prompt")
    except FileNotFoundError:
        return ""


def _baked(path: Path) -> str:
    try:
        return inputs.read_text(path, 4096, "a baked pin").strip()
    except FileNotFoundError:
        return ""


def label(sub: Submission, pins: Pins = CURRENT) -> str:
    """`rankable` (the runner's flag and the published pins), else `local:<commit>/<pred>`."""
    pinned = (sub.library_commit, sub.pred_version) == (pins.library_commit, pins.pred_version)
    if sub.rankable and pinned and sub.prompt_id == (pins.prompt_id or sub.prompt_id):
        return RANKABLE
    return local_label(sub.library_commit, sub.pred_version)


def local_label(commit: str, pred_version: str) -> str:
    return f"local:{commit}/{pred_version}"


def why_not(sub: Submission, pins: Pins = CURRENT) -> list[str]:
    """Why a run is not rankable, one reason a line (empty: it is)."""
    reasons = []
    if not sub.rankable:
        reasons.append(
            "the runner did not certify it rankable (a stub, an incomplete run, or not its rankable path)"
        )
    if sub.library_commit != pins.library_commit:
        reasons.append(
            f"library commit {sub.library_commit[:12]} is not the round's {pins.library_commit[:12]}"
        )
    if sub.pred_version != pins.pred_version:
        reasons.append(f"pred {sub.pred_version} is not the round's {pins.pred_version}")
    if pins.prompt_id and sub.prompt_id != pins.prompt_id:
        reasons.append(
            f"prompt id {sub.prompt_id[:12]} is not the round's frozen prompt {pins.prompt_id[:12]}"
        )
    return reasons


def short(label_: str) -> str:
    """For a table: the commit cut to 8 characters (`local:8df8ac04/0.5.0`)."""
    if not label_.startswith("local:"):
        return label_
    commit, _, pred = label_.removeprefix("local:").rpartition("/")
    return f"local:{commit[:8] if _HEX.fullmatch(commit) else commit}/{pred}"
