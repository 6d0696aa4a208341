"""A preflight check (`benchtui check`, and the cheap ones before every start): what, and the problem."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Check:
    """One preflight check: what was checked, and the problem ("" when ok)."""

    what: str
    problem: str = ""
    detail: str = ""
    """What was found when it is ok (a version, a verdict, a cost)."""

    @property
    def ok(self) -> bool:
        return not self.problem

    def named(self, prefix: str) -> Check:
        """The same check, its subject prefixed (`runner mini: pred`)."""
        return Check(f"{prefix}: {self.what}", self.problem, self.detail)
