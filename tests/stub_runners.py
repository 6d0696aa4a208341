"""Misbehaving runners for the scheduler tests (registered by dotted path: `stub_runners:X`)."""

from __future__ import annotations

from typing import ClassVar, Literal

import trio

from runners.base import RunnerProfile, SessionOutcome, Usage
from runners.fake import FakeProfile, FakeRunner


class StubProfile(RunnerProfile):
    kind: Literal[
        "stub_runners:Raising", "stub_runners:Garbage", "stub_runners:Hanging", "stub_runners:Greedy"
    ]
    every: int = 2
    """Misbehave on every `every`-th session index (others behave like a $0.01 fake)."""


class _Stub:
    Profile: ClassVar[type[RunnerProfile]] = StubProfile

    def __init__(self, profile: StubProfile, *, run_dir) -> None:
        self.profile = profile
        self.fake = FakeRunner(FakeProfile(cost_usd="0.01"), run_dir=run_dir)

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
