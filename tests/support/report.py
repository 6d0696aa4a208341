"""Campaigns with scripted outcomes (the FakeRunner's `bug_sessions`), run in-process to the end."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path
from typing import ClassVar, Literal

import trio

from benchtui.core.contract import RunnerKind, RunnerProfile, SessionOutcome, Usage
from benchtui.core.outcome import SessionFacts
from benchtui.engine import events as ev
from benchtui.engine import run as engine
from benchtui.runners.fake import FakeProfile, FakeRunner, canned_certificate


class ProviderProfile(RunnerProfile):
    kind: Literal["support.report:ProviderRunner"] = "support.report:ProviderRunner"
    down: list[str] = []
    """Models whose provider is down: their sessions end in an infrastructure error."""
    prompts: dict[str, str] = {}
    """The prompt hash each model's sessions report (as the mini-swe-agent runner does)."""
    per_task: bool = False
    """Each task its own prompt: the hash is the model's prompt with the session's task."""


class ProviderRunner(RunnerKind):
    """A $0.01 fake whose provider can be down for some models, reporting a prompt hash."""

    Profile: ClassVar[type[RunnerProfile]] = ProviderProfile

    def __init__(self, profile: ProviderProfile, *, run_dir: Path, target=None, executor=None) -> None:
        self.profile = profile
        self.fake = FakeRunner(
            FakeProfile(cost_usd="0.01", result="no_certificate"), run_dir=run_dir, target=target
        )

    async def run(self, session, meter) -> SessionOutcome:
        name = session.model.name
        prompt = self.profile.prompts.get(name)
        if prompt is not None and self.profile.per_task:
            prompt = f"{prompt}-{session.task}"
        facts = SessionFacts(prompt_sha256=prompt)
        if name in self.profile.down:
            return SessionOutcome("error", reason="API 503 after retries", infra_error=True, facts=facts)
        outcome = await self.fake.run(session, meter)
        return SessionOutcome(outcome.result, outcome.reason, outcome.steps, facts=facts)


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

    def __init__(self, profile: CounterProfile, *, run_dir: Path, target=None, executor=None) -> None:
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
    input_b: str = "3.0",
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
input_usd_per_mtok = {input_b}
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


class JudgingProfile(RunnerProfile):
    kind: Literal["support.report:JudgingRunner"] = "support.report:JudgingRunner"
    pred: str
    """A `pred` (the replay of a real build: support.transcripts.replaying_pred)."""
    certificates: str
    """The folder of the certificate files `submits` names."""
    submits: dict[str, list[str]] = {}
    """Per "model#index", the certificate files its session prints (none: no certificate)."""


class JudgingRunner(RunnerKind):
    """A $0.01 session that prints the given certificates as an agent does, judged by the real
    path of the mini and command runners (runners.kit.verdict.judge, the pred verifier)."""

    Profile: ClassVar[type[RunnerProfile]] = JudgingProfile

    def __init__(self, profile: JudgingProfile, *, run_dir: Path, target=None, executor=None) -> None:
        self.profile = profile

    async def run(self, session, meter) -> SessionOutcome:
        from benchtui.core.target import TargetTools
        from benchtui.runners.kit.verdict import Verification, WorkerDone, WorkerReport, judge
        from benchtui.targets.problem_reductions.kind import ProblemReductions, ProblemReductionsProfile

        usage = Usage(flat_usd=Decimal("0.01"))
        if not await meter.authorise(meter.price(usage)):
            return SessionOutcome("no_certificate", reason="budget_exhausted")
        meter.charge(usage)
        names = self.profile.submits.get(f"{session.model.name}#{session.index}", [])
        folder = Path(self.profile.certificates)
        blocks = [(folder / name).read_text() for name in names]
        session.session_dir.mkdir(parents=True, exist_ok=True)
        how = Verification(
            target=ProblemReductions(ProblemReductionsProfile()),
            tools=TargetTools({"pred": self.profile.pred}, 60.0),
            max_certificates=3,
            certificates_file=session.session_dir / f"attempt-{session.attempt}.certificates.json",
            task=session.task,
        )
        done = WorkerDone(steps=1, exit_status="Submitted", blocks=blocks)
        return await judge(WorkerReport(done=done), how, fingerprint=session.environment_fingerprint)


class PricedProfile(RunnerProfile):
    kind: Literal["support.report:PricedRunner"] = "support.report:PricedRunner"
    input_tokens: int = 1000
    """Each session makes one call of this many input tokens, charged at its model's price."""


class PricedRunner(RunnerKind):
    """One model call per session at the model's own price: dearer models run out sooner."""

    Profile: ClassVar[type[RunnerProfile]] = PricedProfile

    def __init__(self, profile: PricedProfile, *, run_dir: Path, target=None, executor=None) -> None:
        self.profile = profile

    async def run(self, session, meter) -> SessionOutcome:
        usage = Usage(input_tokens=self.profile.input_tokens)
        if not await meter.authorise(meter.price(usage)):
            return SessionOutcome("no_certificate", reason="budget_exhausted")
        meter.charge(usage)
        return SessionOutcome("no_certificate", steps=1)
