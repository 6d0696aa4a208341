"""Campaigns with scripted outcomes (the FakeRunner's `bug_sessions`), run in-process to the end."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path
from typing import ClassVar, Literal

import trio

from benchtui.core.contract import RunnerKind, RunnerProfile, SessionOutcome, Usage
from benchtui.engine import events as ev
from benchtui.engine import run as engine
from benchtui.runners.fake import FakeProfile, FakeRunner, canned_certificate


class ProviderProfile(RunnerProfile):
    kind: Literal["support.report:ProviderRunner"] = "support.report:ProviderRunner"
    down: list[str] = []
    """Models whose provider is down: their sessions end in an infrastructure error."""
    prompts: dict[str, str] = {}
    """The prompt hash each model's sessions report (as the mini-swe-agent runner does)."""


class ProviderRunner(RunnerKind):
    """A $0.01 fake whose provider can be down for some models, reporting a prompt hash."""

    Profile: ClassVar[type[RunnerProfile]] = ProviderProfile

    def __init__(self, profile: ProviderProfile, *, run_dir: Path, executor=None) -> None:
        self.profile = profile
        self.fake = FakeRunner(FakeProfile(cost_usd="0.01", result="no_certificate"), run_dir=run_dir)

    async def run(self, session, meter) -> SessionOutcome:
        name = session.model.name
        extra = {"prompt_sha256": self.profile.prompts[name]} if name in self.profile.prompts else {}
        if name in self.profile.down:
            return SessionOutcome("error", reason="API 503 after retries", infra_error=True, extra=extra)
        outcome = await self.fake.run(session, meter)
        return SessionOutcome(outcome.result, outcome.reason, outcome.steps, extra=extra)


class CounterProfile(RunnerProfile):
    kind: Literal["support.report:CounterRunner"] = "support.report:CounterRunner"
    tries: dict[str, dict[str, int]] = {}
    """How many units of each counter a session tries to take, by "model#index" or by model:
    `model_calls` through `authorise` (a $0.001 call each), the others through `use`; a counter
    is given up at its first refusal, as an agent told "spent" would."""
    submit: list[str] = []
    """Models whose sessions end with a certificate (`bug_found`)."""


class CounterRunner(RunnerKind):
    """Takes logical budget units through the real meter, so the end lines carry real counters."""

    Profile: ClassVar[type[RunnerProfile]] = CounterProfile

    def __init__(self, profile: CounterProfile, *, run_dir: Path, executor=None) -> None:
        self.profile = profile

    async def run(self, session, meter) -> SessionOutcome:
        name = session.model.name
        tries = self.profile.tries
        for counter, n in tries.get(f"{name}#{session.index}", tries.get(name, {})).items():
            for _ in range(n):
                if counter == "model_calls":
                    usage = Usage(flat_usd=Decimal("0.001"))
                    if not await meter.authorise(meter.price(usage)):
                        break
                    meter.charge(usage)
                elif await meter.use(counter) is not None:
                    break
        if name in self.profile.submit:
            return SessionOutcome("bug_found", certificate=canned_certificate(), steps=1)
        return SessionOutcome("no_certificate", steps=1)


LOGICAL = """
[budget.per_session]
model_calls = 3
shell_actions = 5
submits = 2
observation_chars = 10000
[budget.per_session.tools]
pred = 4
"pred solve" = 2
"""


def scripted_toml(
    *,
    name: str = "t",
    bugs: dict[str, list[int]] | None = None,
    runner: str = "fake",
    latency: float = 0.0,
    max_output_b: int = 4096,
    n: int = 8,
    tasks: list[str] | None = None,
    cap: str = "0.07",
    total: str = "0.14",
    enforce: bool = True,
    extra: str = "",
) -> str:
    sessions = (
        f"tasks = {json.dumps(tasks)}\nrepeats = {n // len(tasks)}" if tasks else f"sessions_per_model = {n}"
    )
    scripted = ", ".join(f'"{m}" = {idx}' for m, idx in (bugs or {}).items())
    return f'''name = "{name}"
{sessions}
parallelism = 3
runner = "{runner}"

[budget]
total_usd = {total}
per_model_usd = {cap}
per_session_usd = 0.01
enforce = {str(enforce).lower()}

[runners.fake]
kind = "fake"
cost_usd = 0.01
latency_s = {latency}
bug_sessions = {{ {scripted} }}
{extra}
[[models]]
name = "fake/model-a"
input_usd_per_mtok = 3.0
output_usd_per_mtok = 15.0

[[models]]
name = "fake/model-b"
input_usd_per_mtok = 3.0
output_usd_per_mtok = 15.0
max_output_tokens = {max_output_b}

[environment]
path = "target"
'''


def prepare(tmp_path: Path, fresh: bool = False, **kw) -> engine.PreparedRun:
    (tmp_path / "target").mkdir(exist_ok=True)
    path = tmp_path / "c.toml"
    path.write_text(scripted_toml(**kw))
    return engine.prepare(engine.Options(path, tmp_path / "runs", fresh=fresh))


def run_campaign(tmp_path: Path, fresh: bool = False, finished: bool = True, **kw) -> Path:
    """Run to the end (`finished=False`: sessions ended in retryable errors, left for --resume)."""
    prep = prepare(tmp_path, fresh, **kw)
    try:
        assert trio.run(engine.run, prep, ev.EventBus()) is finished
    finally:
        prep.lock.release()
    return prep.run_dir
