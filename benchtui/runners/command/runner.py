"""CommandRunner: any agent CLI as a runner, spending through the metering gateway.

The runner is an async context manager: the engine enters it once per campaign run, which
starts the gateway (in a nursery the runner owns, via an AsyncExitStack) and exits it when the
campaign ends. Each session gets a fresh copy of the target, a token that dies with it, and
its agent process tree, killed for sure when the session ends in any way.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import signal
import subprocess
from pathlib import Path
from typing import Any, ClassVar

import trio

from benchtui.core import workspace
from benchtui.core.contract import (
    PROBLEM_REDUCTIONS,
    Check,
    Meter,
    RunnerKind,
    RunnerProfile,
    SessionOutcome,
    SessionSpec,
)
from benchtui.core.executor import ExecutorConfig
from benchtui.runners.command import sandbox
from benchtui.runners.command.gateway import Gateway, open_gateway
from benchtui.runners.command.gateway.session import upstream_model
from benchtui.runners.command.profile import CommandProfile
from benchtui.runners.kit import reaper
from benchtui.runners.kit import secrets as keys
from benchtui.runners.kit.bubblewrap import local_bin
from benchtui.runners.kit.toolgate import counting
from benchtui.runners.kit.verdict import WorkerReport, judge
from benchtui.targets.problem_reductions import find_blocks, resolve_pred


class CommandRunner(RunnerKind):
    Profile: ClassVar[type[RunnerProfile]] = CommandProfile
    #: Logical budgets it applies: model calls (the gateway), tools (the shim), submits. An agent
    #: CLI runs commands and shows their output its own way: shell_actions and observation_chars
    #: cannot be applied from outside.
    enforces: ClassVar[frozenset[str]] = frozenset({"model_calls", "submits", "tools"})
    executors: ClassVar[tuple[str, ...]] = ("local", "ray")

    @classmethod
    def preflight(
        cls, profile: Any, *, tasks: list[str] | None, full: bool, target: str = PROBLEM_REDUCTIONS
    ) -> list[Check]:
        from benchtui.runners.command.preflight import preflight

        return preflight(profile, target=target)

    def __init__(
        self, profile: CommandProfile, *, run_dir: Path, executor: ExecutorConfig | None = None
    ) -> None:
        super().__init__(profile, run_dir=run_dir, executor=executor)
        self.profile: CommandProfile = profile
        self.executor: ExecutorConfig | None = executor
        self.remote: Any = None  # a RayExecutor once entered with [executor] kind = "ray"
        found = resolve_pred(profile.pred)
        self.pred = found if os.path.isabs(found) else None
        self.gateway: Gateway | None = None
        self._ready = trio.Event()
        self._stack = contextlib.AsyncExitStack()

    async def __aenter__(self) -> CommandRunner:
        host = "127.0.0.1"
        if self.executor is not None and self.executor.remote:  # the nodes reach the gateway over TCP
            from benchtui.runners.kit.ray.cluster import open_ray

            self.remote = await self._stack.enter_async_context(open_ray(self.executor))
            host = self.remote.gateway_host
        self.gateway = await self._stack.enter_async_context(
            open_gateway(request_timeout_s=self.profile.request_timeout_s, host=host)
        )
        self._ready.set()
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.gateway = None
        await self._stack.aclose()

    async def run(self, session: SessionSpec, meter: Meter) -> SessionOutcome:
        await self._ready.wait()  # the engine enters the runner before (or as) its first session starts
        assert self.gateway is not None
        if self.remote is not None:
            from benchtui.runners.command.remote import run_remote

            return await run_remote(self.profile, self.gateway, self.pred, self.remote, session, meter)
        argv0 = sandbox.resolve(self.profile.command[0])
        if argv0 is None:
            return _infra(f"agent CLI {self.profile.command[0]!r} not found (see the README: agent CLIs)")
        verified = session.target == PROBLEM_REDUCTIONS  # a target without pred: certificates unverified
        if verified and self.pred is None:
            return _infra(f"pred not found ({self.profile.pred!r}): install it or set the profile's `pred`")
        key_name = session.model.api_key_env or self.profile.api_key_env
        secrets = keys.collect(filter(None, [key_name]))
        if key_name and key_name not in secrets:
            return _infra(f"API key variable {key_name} is not set")
        files = session.session_dir.resolve()
        workdir, log = files / "workdir", files / f"attempt-{session.attempt}.agent.log"
        prompt = self.profile.render_prompt(session.task)
        prompt_file = files / f"attempt-{session.attempt}.prompt.md"
        try:
            copy = await trio.to_thread.run_sync(
                _prepare, session.environment.resolve(), workdir, prompt_file, prompt
            )
            with self.gateway.session(meter, session.model, secrets.get(key_name or "")) as grant:
                async with counting.tool_gate(session, meter, self.profile.environment, self.pred) as gate:
                    lifeline, hold = os.pipe()  # see sandbox.LIFELINE
                    try:
                        argv, env = self._command(
                            session, argv0, grant.token, workdir, prompt, prompt_file, files, lifeline, gate
                        )
                        status = await _run_agent(argv, env, workdir, log, lifeline)
                    finally:
                        os.close(hold)
            report = WorkerReport(
                copy_fingerprint=copy,
                prompt_sha256=hashlib.sha256(prompt.encode()).hexdigest(),
                done={
                    "steps": grant.authorised,
                    "exit_status": status,
                    "blocks": _certificates(log, workdir),
                },
            )
            outcome = await judge(
                report,
                fingerprint=session.environment_fingerprint,
                pred=self.pred if verified else None,
                timeout=self.profile.verify_timeout_s,
                max_certificates=self.profile.max_certificates,
                certificates_file=files / f"attempt-{session.attempt}.certificates.json",
                admit=counting.submits(session.limits, meter),
            )
            return counting.explain(outcome, session.limits, meter)
        finally:
            with trio.CancelScope(shield=True):
                await trio.to_thread.run_sync(self._clean_up, files, log, secrets)

    def _command(
        self,
        session: SessionSpec,
        argv0: Path,
        token: str,
        workdir: Path,
        prompt: str,
        prompt_file: Path,
        files: Path,
        lifeline: int,
        gate: dict[str, Any] | None,
    ) -> tuple[list[str], dict[str, str] | None]:
        assert self.gateway is not None
        bwrap = self.profile.environment == "bubblewrap"
        url = f"http://127.0.0.1:{sandbox.INNER_PORT}" if bwrap else self.gateway.url
        values = {
            "{prompt}": prompt,
            "{prompt_file}": str(prompt_file),
            "{task}": session.task or "",
            "{workdir}": str(workdir),
            "{gateway}": url,
            "{model}": upstream_model(session.model.name),
        }
        argv, env = self.profile.invocation(argv0, values, token)
        if not bwrap:
            (files / "home").mkdir(parents=True, exist_ok=True)
            shims = [Path(gate["shims"])] if gate else []
            return argv, sandbox.local_env(files / "home", [*shims, local_bin(files, self.pred)], env)
        binds = [*sandbox.mounts_for(argv0), prompt_file]
        socket_dir = self.gateway.socket_path.parent
        return sandbox.bubblewrap_argv(
            argv,
            workdir=workdir,
            socket_dir=socket_dir,
            env=env,
            pred=self.pred,
            binds=binds,
            lifeline=lifeline,
            gate=gate,
        ), {}

    def _clean_up(self, files: Path, log: Path, secrets: dict[str, str]) -> None:
        keys.redact([log, *files.glob("*.json")], secrets.values())
        if not self.profile.keep_workdir:
            shutil.rmtree(files / "workdir", ignore_errors=True)
            shutil.rmtree(files / "home", ignore_errors=True)
            shutil.rmtree(files / "bin", ignore_errors=True)


def _infra(reason: str) -> SessionOutcome:
    return SessionOutcome("error", reason=reason, infra_error=True)  # not the model's doing: retried


def _prepare(target: Path, workdir: Path, prompt_file: Path, prompt: str) -> str:
    workspace.make_session_copy(target, workdir)
    prompt_file.write_text(prompt)
    return workspace.fingerprint(workdir)


async def _run_agent(
    argv: list[str], env: dict[str, str] | None, workdir: Path, log: Path, lifeline: int
) -> str:
    """Run the agent to its end; on cancellation (kill, wall time, stop) freeze and kill its tree."""
    with log.open("ab") as out:
        try:
            process = await trio.lowlevel.open_process(
                argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, env=env, cwd=workdir,
                start_new_session=True, pass_fds=(lifeline,),
            )  # fmt: skip
        finally:
            os.close(lifeline)  # the sandbox holds the read end now; we keep only the write end
    try:
        code = await process.wait()
    finally:
        if process.returncode is None:  # cancelled: not reaped yet, so its pid is still its own
            reaper.kill_tree(process.pid)
            with trio.CancelScope(shield=True), trio.move_on_after(5):
                await process.wait()
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(
                process.pid, signal.SIGKILL
            )  # what it left in its session (bwrap: its PID namespace died with it)
    return f"exit {code}"


def _certificates(log: Path, workdir: Path) -> list[str]:
    """Certificate blocks in the agent's output, then each JSON line of {workdir}/certificates.jsonl."""
    blocks = find_blocks(log.read_text(errors="replace")) if log.exists() else []
    path = workdir / "certificates.jsonl"
    if path.is_file():
        for line in path.read_text(errors="replace").splitlines():
            with contextlib.suppress(ValueError):
                if isinstance(json.loads(line), dict):
                    blocks.append(line)
    return blocks
