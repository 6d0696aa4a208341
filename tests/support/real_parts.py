"""Real parts no one here wrote: the real `pred`, Chromium, npm agent CLIs, bubblewrap, Ray.

A test that needs one calls `require(...)`: where the part is missing it skips with a clear
reason, except in CI (`CI=true`), where a missing real part is a failure, so CI always proves
the real thing (`.ci/run` installs them). The real `pred` is the exception: it is what a user
installs (cargo install problemreductions-cli), CI does not: without it on PATH its tests skip
with a reason, in CI too (`support.stand_in_pred` replays its recorded answers meanwhile).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() == "true"


def require(what: str, found: object, how: str, *, ci_installs: bool = True) -> None:
    """Skip (fail in CI, for the parts CI installs) unless `found` is truthy; `how` says how to
    get the part."""
    if found:
        return
    message = f"{what} is not available: {how}"
    if in_ci() and ci_installs:
        pytest.fail(f"{message} (CI=true: a missing real part is a failure)", pytrace=False)
    pytest.skip(message)


def real_pred() -> Path | None:
    """The real `pred`: the one on PATH (what a user installs), or None."""
    found = shutil.which("pred")
    return Path(found) if found else None


def require_pred() -> Path:
    """The real pred, or a skip with its reason (in CI too: CI does not install it)."""
    pred = real_pred()
    require(
        "the real `pred`", pred, "put it on PATH (cargo install problemreductions-cli)", ci_installs=False
    )
    assert pred is not None
    return pred
