"""The `[target]` table of the `command` target: the checker's argv, its version, its folder and
its bounds."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar, Literal

from pydantic import Field, field_validator

from benchtui.core import bounds
from benchtui.core.target import TargetProfile

PLACEHOLDER = "{certificate}"


class CommandTargetProfile(TargetProfile):
    """Any benchmark whose findings a program can check: the campaign's own checker verifies each
    certificate in the tool gate's one-shot sandbox (docs/guide/verify.md#a-checker-of-your-own)."""

    path_keys: ClassVar[tuple[str, ...]] = ("workdir",)

    kind: Literal["command"] = "command"
    """A target whose certificates the campaign's own checker program verifies."""
    verify: list[str] = Field(min_length=1, max_length=64)
    """The checker's argv; `{certificate}` is replaced by the path of a file holding one
    certificate (JSON; also on its standard input). Exit 0 confirmed, 1 not a bug, else inconclusive.
    Its program is a path relative to `workdir`, or a name found there or on the system PATH."""
    version: list[str] | None = Field(default=None, min_length=1, max_length=64)
    """An argv printing the checker's version: its output is part of the environment fingerprint."""
    timeout_s: float = Field(default=60.0, gt=0, le=3600, allow_inf_nan=False)
    """Per verification; past it the verdict is inconclusive."""
    workdir: Path | None = None
    """The folder the checker runs in, visible to it read-only (default: the campaign file's)."""
    memory_mb: int = Field(default=2048, gt=0, le=1 << 20)
    """Address space of the checker (a bound, not a reservation)."""
    max_processes: int = Field(default=64, gt=0, le=100_000)
    """Processes the checker may run at once (a pids cgroup where one can be made)."""
    output_bytes: int = Field(default=1 << 16, gt=0, le=1 << 30)
    """Output kept of one verification; a checker printing more is stopped (inconclusive)."""

    @field_validator("verify", "version")
    @classmethod
    def _words(cls, value: list[str] | None) -> list[str] | None:
        for word in value or []:
            bounds.check_text(word, "a word of the checker's command")
        if value is not None and not value[0]:
            raise ValueError("the checker's program is empty")
        return value
