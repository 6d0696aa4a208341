"""Misbehaving runners for the scheduler tests (registered by dotted path: `stub_runners:X`)."""

from __future__ import annotations

import os
from typing import ClassVar, Literal

import trio

from benchtui.core.contract import RunnerKind, RunnerProfile, SessionOutcome, Usage
from benchtui.runners.fake import FakeProfile, FakeRunner


class StubProfile(RunnerProfile):
    kind: Literal[
        "support.stub_runners:Raising",
        "support.stub_runners:Garbage",
        "support.stub_runners:Hanging",
        "support.stub_runners:Greedy",
    ]
    every: int = 2
    """Misbehave on every `every`-th session index (others behave like a $0.01 fake)."""


class _Stub(RunnerKind):
    Profile: ClassVar[type[RunnerProfile]] = StubProfile

    def __init__(self, profile: StubProfile, *, run_dir, target=None, executor=None) -> None:
        self.profile = profile
        self.fake = FakeRunner(FakeProfile(cost_usd="0.01"), run_dir=run_dir, target=target)

    async def run(self, session, meter):
        if session.index % self.profile.every == 0:
            return await self.misbehave(session, meter)
        return await self.fake.run(session, meter)


class Raising(_Stub):
    async def misbehave(self, session, meter):
        await meter.authorise(meter.price(Usage(flat_usd="0.01")))
        raise RuntimeError("boom")


class Garbage(_Stub):
    async def misbehave(self, session, meter):
        return {"result": "bug_found"}


class Hanging(_Stub):
    async def misbehave(self, session, meter):
        await meter.authorise(meter.price(Usage(flat_usd="0.01")))
        await trio.sleep_forever()


class Greedy(_Stub):
    """Reports more usage than it was authorised for (a provider ignoring max_tokens)."""

    async def misbehave(self, session, meter):
        while await meter.authorise(meter.worst_case_usd(1000)):
            meter.charge(Usage(input_tokens=1000, output_tokens=20_000))
            await trio.sleep(0)
        return SessionOutcome("no_certificate", reason="budget_exhausted")


class CountingProfile(RunnerProfile):
    kind: Literal["support.stub_runners:Counting"]
    log: str
    """Where each action the meter granted is written (O_APPEND) right after the grant."""
    tries: int = 30
    """How many rounds of actions the agent tries (more than any limit)."""
    pause_s: float = 0.002


class Counting(RunnerKind):
    """An agent that tries to exceed every logical counter: each round a model call, a shell
    action and a `pred` call (every other one a `pred solve`), until all of them are refused."""

    Profile: ClassVar[type[RunnerProfile]] = CountingProfile
    enforces = frozenset({"model_calls", "shell_actions", "tools", "submits"})

    def __init__(self, profile: CountingProfile, *, run_dir, target=None, executor=None) -> None:
        self.profile = profile

    def _performed(self, session, counter: str) -> None:
        line = f"{session.id}\t{session.attempt}\t{counter}\n".encode()
        fd = os.open(self.profile.log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        try:
            os.write(fd, line)
        finally:
            os.close(fd)

    async def run(self, session, meter):
        usage = Usage(flat_usd="0.0001")
        for round in range(self.profile.tries):
            if await meter.authorise(meter.price(usage)):
                self._performed(session, "model_calls")
                meter.charge(usage)
            if await meter.use("shell_actions") is None:
                self._performed(session, "shell_actions")
            tool = ["pred", "solve"] if round % 2 else ["pred", "list"]
            counters = session.limits.tool_counters(tool)
            if await meter.use(*counters) is None:
                for counter in counters:
                    self._performed(session, counter)
            await trio.sleep(self.profile.pause_s)
        return SessionOutcome("no_certificate", reason="tried everything")


class OutageProfile(RunnerProfile):
    kind: Literal["support.stub_runners:Outage"]
    down: list[str]
    """Models whose provider is down: their sessions end in the infrastructure error `reason`."""
    reason: str = "model API failed (3 requests): APIConnectionError: [Errno 111] Connection refused"
    flaky: bool = False
    """Alternate the outage's reason with an unrelated one (no streak of one kind ever forms)."""


class Outage(RunnerKind):
    """A provider that is down for some models (their sessions fail at once, as on a refusal)."""

    Profile: ClassVar[type[RunnerProfile]] = OutageProfile

    def __init__(self, profile: OutageProfile, *, run_dir, target=None, executor=None) -> None:
        super().__init__(profile, run_dir=run_dir, target=target, executor=executor)
        self.profile = profile
        self.fake = FakeRunner(FakeProfile(cost_usd="0.01"), run_dir=run_dir, target=target)

    async def run(self, session, meter):
        if session.model.name not in self.profile.down:
            return await self.fake.run(session, meter)
        reason = self.profile.reason
        if self.profile.flaky and session.index % 2:
            reason = "worker failed: MemoryError"
        return SessionOutcome("error", reason=reason, infra_error=True)


class EndingsProfile(RunnerProfile):
    kind: Literal["support.stub_runners:Endings"]


ORDER = (
    "found",
    "model_done",
    "step_limit",
    "budget_exhausted",
    "resource_limit",
    "no_action",
    "malformed_action",
    "several_actions",
    "empty_answer",
    "context_window",
    "agent_failed",
    "provider_error",
    "runner_error",
    "setup_error",
    "unstated",
    "overspent",
    "wall_time",
    "killed",
    "interrupted",
)
"""Session index -> the ending it comes to (the test kills `killed` and stops the campaign now
during `interrupted`, the last; the engine's wall-clock limit ends `wall_time`)."""
HANGING = ("wall_time", "killed", "interrupted")


class Endings(RunnerKind):
    """Each session index ends one way of the closed set: as the runner says (the mini and
    command runners say the same for real, tests/runners), or as the engine makes it end."""

    Profile: ClassVar[type[RunnerProfile]] = EndingsProfile

    def __init__(self, profile, *, run_dir, target=None, executor=None) -> None:
        self.profile = profile
        self.fake = FakeRunner(
            FakeProfile(cost_usd="0.001", result="bug_found"), run_dir=run_dir, target=target
        )

    async def run(self, session, meter):
        from benchtui.runners.fake import scripted_ending

        ending = ORDER[session.index]
        if ending in ("found", "model_done"):
            outcome = await self.fake.run(session, meter)
            return outcome if ending == "found" else SessionOutcome("no_certificate", ending="model_done")
        await meter.authorise(meter.price(Usage(flat_usd="0.001")))
        meter.charge(Usage(flat_usd="0.001"))
        if ending == "runner_error":
            raise RuntimeError("boom")
        if ending == "unstated":
            return SessionOutcome("no_certificate", reason="a runner that does not say why")
        if ending == "overspent":  # a provider that ignores max_tokens: far past the reservation
            meter.charge(Usage(input_tokens=1000, output_tokens=20_000))
            await trio.sleep_forever()  # the meter has the attempt stopped
        if ending in HANGING:
            await trio.sleep_forever()
        return scripted_ending(ending)
