"""Real parts no one here wrote: the real `pred`, Chromium, npm agent CLIs, bubblewrap, Ray.

A test that needs one calls `require(...)`: where the part is missing it skips with a clear
reason, except in CI (`CI=true`), where a missing real part is a failure, so CI always proves
the real thing (`.ci/run` installs them).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# The project's sibling `shared/` folder holds the prebuilt real pred; a clone elsewhere has none.
SHARED_PRED = ROOT.parent / "shared" / "tools" / "pred" / "bin" / "pred"


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() == "true"


def require(what: str, found: object, how: str) -> None:
    """Skip (fail in CI) unless `found` is truthy; `how` says how to get the part."""
    if found:
        return
    message = f"{what} is not available: {how}"
    if in_ci():
        pytest.fail(f"{message} (CI=true: a missing real part is a failure)", pytrace=False)
    pytest.skip(message)


def real_pred() -> Path | None:
    """`pred` on PATH, else the prebuilt one beside the project (../shared/tools/pred/bin/pred)."""
    found = shutil.which("pred")
    if found:
        return Path(found)
    return SHARED_PRED if os.access(SHARED_PRED, os.X_OK) else None


def require_pred() -> Path:
    pred = real_pred()
    require("the real `pred`", pred, "put it on PATH (cargo install problemreductions-cli)")
    assert pred is not None
    return pred
