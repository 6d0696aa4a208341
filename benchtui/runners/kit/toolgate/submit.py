"""`submit FILE` inside a session: a `submits` unit per attempt (malformed ones included), the
verifier's verdict at once, printed first line `ACCEPTED` or `REJECTED`, then the reason, the
attempts left and the budget line. An accepted submit ends the session (unless the campaign keeps
hunting): `accepted` is set, and the runner stops its agent."""

from __future__ import annotations

import hashlib
from collections.abc import Awaitable, Callable
from typing import Any

import trio

from benchtui.core.contract import LogicalLimits, Meter
from benchtui.runners.kit.toolgate.server import Answer, Call, Record
from benchtui.targets.problem_reductions import Verdict, parse_block
from benchtui.targets.problem_reductions.tasks import on_task

Verify = Callable[[dict[str, Any]], Awaitable[Verdict]]


def for_task(verdict: Verdict, cert: dict[str, Any], task: str | None) -> Verdict:
    """A certificate the verifier accepts for another rule than the session's task is `off_task`
    (rejected), as the end-of-session judge says of a printed one: a submit cannot score the
    session a bug of another rule (a public certificate, say)."""
    if not (verdict.accepted and task and not on_task(cert, task)):
        return verdict
    return Verdict(
        "rejected",
        f"off_task: the certificate is for {str(cert.get('rule'))[:200]!r}, not this session's task "
        f"{task!r} (the verifier: {verdict.reason})",
        {**verdict.details, "cause": "off_task", "task": task},
    )


class Submissions:
    """The session's submits, in order: what was submitted and its verdict."""

    def __init__(
        self,
        meter: Meter,
        limits: LogicalLimits,
        verify: Verify,
        *,
        record: Record,
        budget_line: Callable[[], str],
    ) -> None:
        self.meter, self.limits, self.verify = meter, limits, verify
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
            return self._answer(Verdict("rejected", "the session has ended: a certificate was accepted"))
        spent = await self.meter.use("submits")
        if spent is not None:
            verdict = Verdict(
                "rejected", f"not verified: the session's {self.limits.submits} submits are spent"
            )
            self.record("submit", file=name, sha256=digest, verdict="refused", reason=verdict.reason)
            return self._answer(verdict)
        cert: dict[str, Any] | None = None
        if call.file_error is not None:
            verdict = Verdict("rejected", f"malformed certificate: {call.file_error}", {"cause": "malformed"})
        else:
            cert, problem = await trio.to_thread.run_sync(parse_block, text)
            verdict = (
                await self.verify(cert)
                if cert is not None
                else Verdict("rejected", f"malformed certificate: {problem}", {"cause": "malformed"})
            )
        self.checked.append((cert, verdict))
        self.record("submit", file=name, sha256=digest, verdict=verdict.status, reason=verdict.reason)
        if verdict.accepted:
            self.accepted.set()
        return self._answer(verdict)

    def _answer(self, verdict: Verdict) -> Answer:
        first = "ACCEPTED" if verdict.accepted else "REJECTED"
        reason = verdict.reason if verdict.status != "inconclusive" else f"inconclusive: {verdict.reason}"
        lines = [first, reason, f"attempts left: {self.left()}"]
        if verdict.accepted and not self.limits.keep_hunting:
            lines.append("the session ends here")
        line = self.budget_line()
        return Answer(
            0 if verdict.accepted else 1, stdout="\n".join([*lines, *([line] if line else [])]) + "\n"
        )
