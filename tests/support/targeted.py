"""A fake runner whose sessions use the target's programs (as mini-swe-agent's and the command
runner's do), so a run records `pred`'s version and sha256: no model call, no real pred needed."""

from __future__ import annotations

import os
from pathlib import Path
from typing import ClassVar, Literal

from benchtui.core.contract import RunnerProfile
from benchtui.runners.fake import FakeProfile, FakeRunner

KIND = "support.targeted:TargetedFake"


class TargetedProfile(FakeProfile):
    kind: Literal["support.targeted:TargetedFake"] = KIND  # type: ignore[assignment]
    action_format: Literal["tool_call", "text"] = "tool_call"
    """Only named (as mini-swe-agent's profile names it): the report compares it between runs."""


class TargetedFake(FakeRunner):
    Profile: ClassVar[type[RunnerProfile]] = TargetedProfile
    uses_target = True


def fake_pred(folder: Path, build: str = "one build") -> Path:
    """An executable `pred` printing `pred 0.5.0` whatever its build (the sha256 tells builds apart)."""
    folder.mkdir(parents=True, exist_ok=True)
    pred = folder / "pred"
    pred.write_text(f"#!/bin/sh\n# {build}\necho 'pred 0.5.0'\n")
    pred.chmod(0o755)
    return pred


def on_path(folder: Path, monkeypatch) -> None:
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ['PATH']}")
