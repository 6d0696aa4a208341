"""The `none` target: a library without a verifier or an inventory (certificates are recorded
unverified: claims, never confirmed)."""

from __future__ import annotations

from typing import ClassVar, Literal

from benchtui.core.target import TargetKind, TargetProfile


class NoTargetProfile(TargetProfile):
    """A target without a verifier or an inventory: certificates are recorded unverified (claims)."""

    kind: Literal["none"] = "none"
    """A target without a verifier: sessions' certificates are recorded unverified."""


class NoTarget(TargetKind):
    Profile: ClassVar[type[TargetProfile]] = NoTargetProfile
