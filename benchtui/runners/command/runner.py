"""CommandRunner: any agent CLI as a runner, spending through the metering gateway.

The runner is an async context manager: the engine enters it once per campaign run, which
starts the gateway (in a nursery the runner owns, via an AsyncExitStack) and exits it when the
campaign ends. Each session gets a fresh copy of the target, a token that dies with it, and
its agent process tree, killed for sure when the session ends in any way.

A session's flow is written once (`run`): checks, prompt, token, the agent's run, certificates,
verdict. Where the agent process runs is its placement's only business: this machine
(`command.local`) or a Ray node (`command.remote`); both give back the same `Ran`.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any, ClassVar, Protocol

import trio

from benchtui.core import tempdirs
from benchtui.core.atomic import atomic_write
from benchtui.core.certificates import find_blocks
from benchtui.core.contract import (
    Check,
    LogicalLimits,
    Meter,
    RunnerKind,
    RunnerProfile,
    SessionOutcome,
    SessionSpec,
)
from benchtui.core.executor import ExecutorConfig
from benchtui.core.target import TargetKind, TargetTools, Toolbox
from benchtui.runners.command import sandbox
from benchtui.runners.command.launch import NOT_STARTED, AgentCommand, Ran
from benchtui.runners.command.profile import CommandProfile
from benchtui.runners.kit import resources as processes
from benchtui.runners.kit import secrets as keys
from benchtui.runners.kit.evidence import Evidence
from benchtui.runners.kit.gateway import Gateway, open_gateway
from benchtui.runners.kit.gateway.grant import upstream_model
from benchtui.runners.kit.oneshot import OneShot
from benchtui.runners.kit.toolgate import counting
from benchtui.runners.kit.verdict import Verification, WorkerDone, WorkerReport, judge


class Placement(Protocol):
    """Where an agent process runs; everything else about a session is the runner's."""

    async def run_agent(
        self,
        session: SessionSpec,
        meter: Meter,
        command: AgentCommand,
        prompt_file: Path,
        evidence: Evidence | None = None,
        verification: Verification | None = None,
    ) -> Ran: ...


class CommandRunner(RunnerKind):
    Profile: ClassVar[type[RunnerProfile]] = CommandProfile
    #: Logical budgets it applies: model calls (the gateway), tools (the shim), submits. An agent
    #: CLI runs commands and shows their output its own way: shell_actions and observation_chars
    #: cannot be applied from outside.
    enforces: ClassVar[frozenset[str]] = frozenset({"model_calls", "submits", "tools"})
    executors: ClassVar[tuple[str, ...]] = ("local", "ray")
    uses_target = True

    @classmethod
    def preflight(cls, profile: Any, *, tasks: list[str] | None, full: bool) -> list[Check]:
        from benchtui.runners.command.preflight import preflight

        return preflight(profile)

    @classmethod
    def target_tools(cls, profile: Any, target: type[TargetKind]) -> TargetTools:
        """The target's programs (its `toolbox`), the profile's verify timeout, the tool gate's
        one-shot sandbox for the target's own programs."""
        toolbox = cls.find_toolbox(profile, target)
        sandbox = OneShot(sandboxed=profile.environment == "bubblewrap")
        return TargetTools(toolbox.found, profile.verify_timeout_s, sandbox, toolbox.missing)

    @classmethod
    def notes(cls, profile: Any) -> list[str]:
        """Where session copies cannot be volumes of their own: their disk bound is polled."""
        return processes.copy_notes(profile.environment)

    @classmethod
    def check_limits(
        cls, profile: Any, limits: LogicalLimits, *, toolbox: Toolbox | None = None
    ) -> list[Check]:
        """A counted tool the sandbox shows anyway is refused when the campaign loads."""
        return counting.check_limits(profile.environment, toolbox, limits)

    def __init__(
        self,
        profile: CommandProfile,
        *,
        run_dir: Path,
        target: TargetKind,
        executor: ExecutorConfig | None = None,
    ) -> None:
        super().__init__(profile, run_dir=run_dir, target=target, executor=executor)
        self.profile: CommandProfile = profile
        self.executor: ExecutorConfig | None = executor
        self.remote: Any = None  # a RayExecutor once entered with [executor] kind = "ray"
        self.tools = self.target_tools(profile, type(target))
        # The target's programs: on the agent's PATH and behind the tool gate.
        self.toolbox = self.find_toolbox(profile, type(target))
        self.gateway: Gateway | None = None
        self.placement: Placement | None = None
        self._ready = trio.Event()
        self._stack = contextlib.AsyncExitStack()
        self._prompts = Path()
        """The rendered prompts the sandboxes bind, by content (`__aenter__` makes the folder)."""

    async def __aenter__(self) -> CommandRunner:
        self._prompts = tempdirs.make("prompt")
        self._stack.callback(shutil.rmtree, self._prompts, ignore_errors=True)
        host = "127.0.0.1"
        if self.executor is not None and self.executor.remote:  # the nodes reach the gateway over TCP
            from benchtui.runners.kit.ray.cluster import open_ray

            self.remote = await self._stack.enter_async_context(open_ray(self.executor))
            host = self.remote.gateway_host
        self.gateway = await self._stack.enter_async_context(
            open_gateway(
                request_timeout_s=self.profile.request_timeout_s, host=host, nodes=self.remote is not None
            )
        )
        if self.remote is not None:
            from benchtui.runners.command.remote import RayPlacement
            from benchtui.runners.kit.ray.callback import CallbackListener

            nursery = await self._stack.enter_async_context(trio.open_nursery())
            self._stack.callback(nursery.cancel_scope.cancel)  # runs first on exit
            listener = CallbackListener()  # where the nodes' tool gates ask this engine's
            await nursery.start(listener.serve, host)
            self.placement = RayPlacement(self.profile, self.gateway, self.remote, listener, self.toolbox)
        else:
            from benchtui.runners.command.local import LocalPlacement

            self.placement = LocalPlacement(self.profile, self.gateway, self.toolbox)
        self._ready.set()
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.gateway = None
        await self._stack.aclose()

    async def run(self, session: SessionSpec, meter: Meter) -> SessionOutcome:
        await self._ready.wait()  # the engine enters the runner before (or as) its first session starts
        assert self.gateway is not None and self.placement is not None
        profile = self.profile
        argv0 = sandbox.resolve(profile.command[0])
        if argv0 is None:
            return _infra(f"agent CLI {profile.command[0]!r} not found (see the README: agent CLIs)")
        if self.toolbox.problem:
            return _infra(self.toolbox.problem)
        key_name = session.model.api_key_env or profile.api_key_env
        secrets = keys.collect(filter(None, [key_name]))
        if key_name and key_name not in secrets:
            return _infra(f"API key variable {key_name} is not set")
        files = session.session_dir.resolve()
        log = files / f"attempt-{session.attempt}.agent.log"
        prompt = profile.render_prompt(session.task, self.target.brief)
        prompt_sha256 = hashlib.sha256(prompt.encode()).hexdigest()
        prompt_file = files / f"attempt-{session.attempt}.prompt.md"
        # What the sandbox binds: the same prompt, at a host path that names no session.
        shared_prompt = self._prompts / f"prompt-{prompt_sha256[:16]}.md"
        bwrap = profile.environment == "bubblewrap"
        values = {
            "{prompt}": prompt,
            "{task}": session.task or "",
            "{gateway}": f"http://127.0.0.1:{sandbox.INNER_PORT}" if bwrap else self.gateway.url,
            "{model}": upstream_model(session.model.name),
        }
        evidence = Evidence(files, session.attempt)
        how = Verification(
            target=self.target,
            tools=self.tools,
            max_certificates=profile.max_certificates,
            certificates_file=files / f"attempt-{session.attempt}.certificates.json",
            admit=counting.submits(session.limits, meter, evidence),
            task=session.task,
        )
        try:
            await trio.to_thread.run_sync(_write_prompt, prompt_file, prompt)
            await trio.to_thread.run_sync(_share_prompt, shared_prompt, prompt)
            async with self.gateway.session(meter, session.model, secrets.get(key_name or "")) as grant:
                command = AgentCommand(profile, argv0, values, grant.token, self.toolbox)
                ran = await self.placement.run_agent(session, meter, command, shared_prompt, evidence, how)
            if ran.error:
                return SessionOutcome(
                    "error", reason=ran.error, infra_error=True, facts=ran.facts, ending="runner_error"
                )
            if ran.code in NOT_STARTED and grant.authorised == 0:
                # A shell that could not run the agent (missing, not executable, or its interpreter
                # missing in the sandbox): a set-up error, never a trial the model lost. Once the
                # agent made a model call it has started: then its exit status is its own.
                last = ran.log.decode(errors="replace").strip().splitlines()[-1:] or ["(no output)"]
                why = f"agent CLI could not start ({ran.status}): {last[0][:300]}"
                return SessionOutcome(
                    "error", reason=why, infra_error=True, facts=ran.facts, ending="setup_error"
                )
            blocks = await trio.to_thread.run_sync(_blocks, ran)
            done = WorkerDone(
                steps=grant.authorised,
                exit_status="ResourceLimit" if ran.limits else ran.status,
                blocks=blocks,
                limits=ran.limits,
                collect_problem=ran.collect_problem,
            )
            report = WorkerReport(
                copy_fingerprint=ran.fingerprint,
                prompt_sha256=prompt_sha256,
                done=done,
                facts=ran.facts,
            )
            outcome = await judge(
                report, how, fingerprint=session.environment_fingerprint, submitted=ran.submitted
            )
            return counting.explain(outcome, session.limits, meter)
        finally:
            evidence.close()
            with trio.CancelScope(shield=True):
                await trio.to_thread.run_sync(keys.redact, [log, *files.glob("*.json")], secrets.values())


def _infra(reason: str) -> SessionOutcome:
    """Not the model's doing (a program or a key missing): retried on --resume."""
    return SessionOutcome("error", reason=reason, infra_error=True, ending="setup_error")


def _write_prompt(path: Path, prompt: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, prompt.encode())


def _share_prompt(path: Path, prompt: str) -> None:
    """The prompt at `path`, once for all sessions with this prompt (each writes its own temporary
    file: two sessions of one task may start at once)."""
    if path.exists():
        return
    fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=".prompt-")
    with os.fdopen(fd, "wb") as f:
        f.write(prompt.encode())
    os.chmod(temporary, 0o644)
    os.replace(temporary, path)


def _blocks(ran: Ran) -> list[str]:
    """Certificate blocks in the agent's output, then each JSON line of {workdir}/certificates.jsonl."""
    return [*find_blocks(ran.log.decode(errors="replace")), *ran.certificate_lines]
