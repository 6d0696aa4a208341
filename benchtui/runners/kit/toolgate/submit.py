"""`submit FILE` inside a session: a `submits` unit per attempt (malformed ones included), the
verifier's verdict at once, printed first line `ACCEPTED` or `REJECTED`, then the reason, the
attempts left and the budget line. An accepted submit ends the session (unless the campaign keeps
hunting): `accepted` is set, and the runner stops its agent."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Any

import trio

from benchtui.core.contract import LogicalLimits, Meter
from benchtui.core.target import Verdict, malformed
from benchtui.runners.kit.toolgate.server import Answer, Call, Record
from benchtui.runners.kit.verdict import Verification


class Submissions:
    """The session's submits, in order: what was submitted and its verdict."""

    def __init__(
        self,
        meter: Meter,
        limits: LogicalLimits,
        verification: Verification,
        *,
        record: Record,
        budget_line: Callable[[], str],
    ) -> None:
        self.meter, self.limits, self.verification = meter, limits, verification
        self.record, self.budget_line = record, budget_line
        self.checked: list[tuple[dict[str, Any] | None, Verdict]] = []
        self.accepted = trio.Event()

    def left(self) -> int:
        return max(0, (self.limits.submits or 0) - self.meter.used("submits"))

    async def __call__(self, call: Call) -> Answer:
        text = call.file if call.file is not None else ""
        digest = hashlib.sha256(text.encode(errors="replace")).hexdigest()
        name = call.argv[1] if len(call.argv) > 1 else ""
        if self.accepted.is_set() and not self.limits.keep_hunting:
            return self._answer(
                Verdict("rejected", "the session has ended: a certificate was accepted", "refused")
            )
        spent = await self.meter.use("submits")
        if spent is not None:
            verdict = Verdict(
                "rejected", f"not verified: the session's {self.limits.submits} submits are spent", "refused"
            )
            self.record("submit", file=name, sha256=digest, verdict="refused", reason=verdict.reason)
            return self._answer(verdict)
        cert: dict[str, Any] | None = None
        if call.file_error is not None:
            verdict = malformed(call.file_error)
        else:
            cert, problem = await trio.to_thread.run_sync(self.verification.target.parse, text)
            verdict = await self.verification.verify(cert) if cert is not None else malformed(problem)
        self.checked.append((cert, verdict))
        self.record("submit", file=name, sha256=digest, verdict=verdict.status, reason=verdict.reason)
        if verdict.accepted:
            self.accepted.set()
        return self._answer(verdict)

    def _answer(self, verdict: Verdict) -> Answer:
        first = "ACCEPTED" if verdict.accepted else "REJECTED"
        reason = verdict.reason
        if verdict.status == "inconclusive" and not reason.startswith("inconclusive"):
            reason = f"inconclusive: {reason}"  # (the target's reasons mostly say so themselves)
        lines = [first, reason, f"attempts left: {self.left()}"]
        if verdict.accepted and not self.limits.keep_hunting:
            lines.append("the session ends here")
        line = self.budget_line()
        return Answer(
            0 if verdict.accepted else 1, stdout="\n".join([*lines, *([line] if line else [])]) + "\n"
        )
