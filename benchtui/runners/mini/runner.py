"""MiniSweRunner: the engine's side of a mini-swe-agent session (Trio; never imports litellm).

A session is a worker process forked from the pre-warmed zygote. The engine answers its
authorisation requests with the meter (docs/design/invariants.md#f5), charges its reported usage at campaign prices (docs/design/invariants.md#f6),
and, when the session ends in any way (done, killed, cancelled, wall time), freezes and kills
the worker's whole process tree, including commands the agent left running.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import signal
from collections.abc import Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, ClassVar, Self

import trio

from benchtui.core import volume
from benchtui.core.contract import (
    Check,
    LogicalLimits,
    Meter,
    ModelSpec,
    RunnerKind,
    RunnerProfile,
    SessionOutcome,
    SessionSpec,
)
from benchtui.core.executor import ExecutorConfig
from benchtui.core.target import TargetKind, TargetTools, Toolbox
from benchtui.runners.kit import beneath, reaper, serverprobe
from benchtui.runners.kit import resources as processes
from benchtui.runners.kit import secrets as keys
from benchtui.runners.kit.evidence import Evidence
from benchtui.runners.kit.oneshot import OneShot
from benchtui.runners.kit.toolgate import counting
from benchtui.runners.kit.verdict import Verification, WorkerReport, judge
from benchtui.runners.mini import forkserver, routes
from benchtui.runners.mini import preflight as checks
from benchtui.runners.mini.ping import KEYLESS
from benchtui.runners.mini.profile import TRIAGE_TEMPLATE, MiniSweProfile, load_templates
from benchtui.runners.mini.protocol import EngineChannel
from benchtui.runners.mini.serving import Worker, WorkerSession

SHORTLIST_FILE = "shortlist.json"
"""What a triage commits: this file in its working directory, as it is when the session ends."""
SHORTLIST_MAX_BYTES = 1024 * 1024


@dataclass(frozen=True)
class SessionFiles:
    """`sessions/<id>/`: per attempt a trajectory (mini-swe-agent's format), a log, the certificates."""

    dir: Path
    attempt: int

    def attempt_file(self, suffix: str) -> Path:
        return self.dir / f"attempt-{self.attempt}.{suffix}"

    @property
    def written(self) -> list[Path]:
        return [self.attempt_file(s) for s in ("traj.json", "worker.log", "certificates.json")]


class WorkerProcess:
    """A worker we did not fork ourselves (the zygote did): a pid plus, where possible, a pidfd."""

    def __init__(self) -> None:
        self.pid: int | None = None
        self._pidfd: int | None = None

    def adopt(self, pid: int) -> None:
        self.pid = pid
        try:
            self._pidfd = os.pidfd_open(pid)
        except OSError:
            self._pidfd = None

    def alive(self) -> bool:
        if self.pid is None:
            return False
        if self._pidfd is not None:
            try:
                signal.pidfd_send_signal(self._pidfd, 0)
            except ProcessLookupError:
                return False
        return reaper.is_alive(self.pid)

    def kill(self) -> None:
        if self.pid is not None and self.alive():
            reaper.kill_tree(self.pid)

    async def wait_exit(self, timeout: float) -> bool:
        """Wait for the worker to exit: its pidfd becomes readable then (as trio.Process.wait
        does); without a pidfd (an old kernel), poll."""
        with trio.move_on_after(timeout):
            if self._pidfd is not None:
                await trio.lowlevel.wait_readable(self._pidfd)
            while self.alive():
                await trio.sleep(0.01)
        return not self.alive()

    def close(self) -> None:
        if self._pidfd is not None:
            trio.lowlevel.notify_closing(self._pidfd)
            os.close(self._pidfd)
            self._pidfd = None


class MiniSweRunner(RunnerKind):
    """Enter it (`async with runner:`) before running sessions: it owns the pre-warmed zygote."""

    Profile: ClassVar[type[RunnerProfile]] = MiniSweProfile
    #: Logical budgets it applies (`[budget.per_session]`): all of them.
    enforces: ClassVar[frozenset[str]] = frozenset(
        {"model_calls", "shell_actions", "submits", "observation_chars", "tools"}
    )

    executors: ClassVar[tuple[str, ...]] = ("local", "ray")
    uses_target = True

    @classmethod
    def preflight(cls, profile: Any, *, tasks: list[str] | None, full: bool) -> list[Check]:
        return checks.preflight(profile)

    @classmethod
    def target_tools(cls, profile: Any, target: type[TargetKind]) -> TargetTools:
        """The target's programs (its `toolbox`), the profile's verify timeout, the tool gate's
        one-shot sandbox for the target's own programs."""
        toolbox = cls.find_toolbox(profile, target)
        sandbox = OneShot(sandboxed=profile.environment == "bubblewrap")
        return TargetTools(toolbox.found, profile.verify_timeout_s, sandbox, toolbox.missing)

    @classmethod
    def toolbox_checks(cls, profile: Any, toolbox: Toolbox) -> list[Check]:
        """(bubblewrap) A sandbox as sessions start it, the target's first program run inside."""
        return checks.sandbox_checks(profile, toolbox)

    @classmethod
    def ping_profile(cls, profile: Any) -> dict[str, Any] | None:
        return checks.ping_profile(profile)

    @classmethod
    def model_checks(cls, profile: Any, models: Sequence[ModelSpec]) -> list[Check]:
        """A model name litellm routes to no provider (runners/mini/routes.py)."""
        return routes.model_checks(models)

    @classmethod
    def notes(cls, profile: Any) -> list[str]:
        """Where session copies cannot be volumes of their own: their disk bound is polled."""
        return processes.copy_notes(profile.environment)

    @classmethod
    def check_limits(
        cls, profile: Any, limits: LogicalLimits, *, toolbox: Toolbox | None = None
    ) -> list[Check]:
        """A counted tool the sandbox shows anyway is refused when the campaign loads."""
        return checks.check_limits(profile, limits, toolbox or Toolbox())

    runs_triage = True

    @classmethod
    def triage_problem(cls, profile: Any) -> str:
        """A shortlist campaign's triage needs the templates' triage instance template."""
        if TRIAGE_TEMPLATE not in load_templates(profile.templates_path):
            return f"templates {profile.templates_path} have no {TRIAGE_TEMPLATE}"
        return ""

    def __init__(
        self,
        profile: MiniSweProfile,
        *,
        run_dir: Path,
        target: TargetKind,
        executor: ExecutorConfig | None = None,
    ) -> None:
        super().__init__(profile, run_dir=run_dir, target=target, executor=executor)
        self.profile: MiniSweProfile = profile
        self.executor: ExecutorConfig | None = executor
        self.remote: Any = None  # (RayExecutor, CallbackListener) once entered with kind = "ray"
        self.tools = self.target_tools(profile, type(target))
        # The target's programs: on the agent's PATH and behind the tool gate.
        self.toolbox = self.find_toolbox(profile, type(target))
        self.volumes = not volume.unavailable()
        self._forkserver: forkserver.Forkserver | None = None
        self._services = AsyncExitStack()

    async def __aenter__(self) -> Self:
        nursery = await self._services.enter_async_context(trio.open_nursery())
        self._services.callback(nursery.cancel_scope.cancel)  # runs first on exit: stops the zygote
        self._forkserver = forkserver.Forkserver(nursery)
        if self.executor is not None and self.executor.remote:  # workers run on nodes, calling back
            from benchtui.runners.kit.ray.callback import CallbackListener
            from benchtui.runners.kit.ray.cluster import open_ray

            executor = await self._services.enter_async_context(open_ray(self.executor))
            listener = CallbackListener()
            await nursery.start(listener.serve, executor.gateway_host)
            self.remote = (executor, listener)
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        self._forkserver = None
        await self._services.aclose()

    async def run(self, session: SessionSpec, meter: Meter) -> SessionOutcome:
        if self.toolbox.problem:
            return SessionOutcome(
                "error",
                reason=self.toolbox.problem,
                infra_error=True,  # not the model's doing: retried on --resume once it is there
                ending="setup_error",
            )
        key_name = session.model.api_key_env or self.profile.api_key_env
        secrets = keys.collect(filter(None, [key_name]))
        if key_name and key_name not in secrets:
            why = f"API key variable {key_name} is not set"
            return SessionOutcome("error", reason=why, infra_error=True, ending="setup_error")
        files = SessionFiles(session.session_dir.resolve(), session.attempt)
        files.dir.mkdir(parents=True, exist_ok=True)
        report = WorkerReport(max_output_tokens=session.model.max_output_tokens)
        request = self._request(session, files, secrets, key_name)
        evidence = Evidence(files.dir, session.attempt)
        how = Verification(
            target=self.target,
            tools=self.tools,
            max_certificates=0 if session.triage is not None else self.profile.max_certificates,
            certificates_file=files.attempt_file("certificates.json"),
            admit=counting.submits(session.limits, meter, evidence),
            task=session.task,
        )
        submitted = None
        try:
            tmp_bytes = self.profile.max_disk_mb * 1024 * 1024
            async with counting.open_gate(
                session,
                meter,
                self.profile.environment,
                self.toolbox,
                workdir=files.dir / "workdir",
                verification=how,
                evidence=evidence,
                tmp_bytes=tmp_bytes,
                tools_print_budget=False,  # every observation starts with the budget line
                remote=self.remote is not None,  # on a Ray node: a gate there asks this one
            ) as gate:
                request["paths"]["gate"] = gate.sandbox
                served = WorkerSession(meter, report, self._worker(), gate, evidence, self.remote is not None)
                if self.remote is None:
                    await self._run_worker(request, served)
                else:
                    sandboxed = self.profile.environment == "bubblewrap"
                    node_gate = counting.on_node(
                        gate, self.remote[1], sandboxed=sandboxed, toolbox=self.toolbox, tmp_bytes=tmp_bytes
                    )
                    async with node_gate as spec:
                        request["node_gate"] = (  # JSON to the node: its toolbox as Toolbox.to_json
                            {**dataclasses.asdict(spec), "toolbox": spec.toolbox and spec.toolbox.to_json()}
                            if spec is not None
                            else None
                        )
                        await self._run_worker(request, served)
                submitted = gate.submissions.checked if gate.submissions else None
            committed = None
            if session.triage is not None:  # read before the workdir is cleaned up
                committed = await trio.to_thread.run_sync(read_shortlist, files.dir / "workdir")
            outcome = await judge(
                report, how, fingerprint=session.environment_fingerprint, submitted=submitted
            )
            outcome = counting.explain(outcome, session.limits, meter)
            if committed is not None and not outcome.infra_error:
                outcome = replace(outcome, shortlist=committed[0], reason=committed[1] or outcome.reason)
            if outcome.ending == "no_action" and outcome.actions == 0:  # what stood in its way
                cause = await serverprobe.obstacle(
                    "no_action", self.profile.action_format, session.model.api_base
                )
                outcome = replace(outcome, cause=cause)
            return replace(outcome, reason=keys.scrub(outcome.reason, secrets.values()))
        finally:
            evidence.close()
            with trio.CancelScope(shield=True):
                await trio.to_thread.run_sync(self._clean_up, files, secrets)
                await trio.to_thread.run_sync(processes.remove_cgroup, report.cgroup)  # the worker is gone

    def _request(
        self, session: SessionSpec, files: SessionFiles, secrets: dict[str, str], key_name: str | None
    ) -> dict[str, Any]:
        p, m = self.profile, session.model
        triage = session.triage
        return {
            # A shortlist campaign's triage: its own instance template, the source only (no programs).
            **(
                {
                    "instance": TRIAGE_TEMPLATE,
                    "template_vars": {"rules": list(triage.rules), "shortlist_size": triage.size},
                }
                if triage is not None
                else {}
            ),
            "session": session.id,
            "task": session.task,
            "brief": dict(self.target.brief),  # the target's words in the templates
            "attempt": session.attempt,
            "model": {
                "name": m.name,
                "max_output_tokens": m.max_output_tokens,
                "api_base": m.api_base,
                "litellm": dict(m.litellm),
            },
            "profile": {
                k: getattr(p, k)
                for k in (
                    "environment",
                    "step_limit",
                    "command_timeout_s",
                    "retries",
                    "retry_backoff_s",
                    "request_timeout_s",
                    "prompt_token_margin",
                    "max_processes",
                    "max_disk_mb",
                    "command_output_bytes",
                    "trajectory_output_bytes",
                    "action_format",
                )
            }
            # The campaign's logical budget, when it sets one, is what every model sees.
            | {"observation_chars": session.limits.observation_chars or p.observation_chars},
            "paths": {
                "target": str(session.environment.resolve()),
                "workdir": str(files.dir / "workdir"),
                "session_dir": str(files.dir),
                "trajectory": str(files.attempt_file("traj.json")),
                "log": str(files.attempt_file("worker.log")),
                "templates": str(p.templates_path),
                "programs": self.toolbox.to_json() if triage is None else None,
            },
            "count_actions": bool(session.limits),
            # The copy on a filesystem of its own (the kernel bounds its disk), wherever it is made.
            "volume": self.volumes,
            "budget": counting.describe(session.limits),
            "env": keys.public_environment(filter(None, [key_name])),
            "secrets": secrets,
            # No key variable but an api_base: a keyless server (a local model). The provider's
            # SDK refuses to send without some key, so it gets one that names none.
            "api_key": secrets.get(key_name) if key_name else (KEYLESS if session.model.api_base else None),
        }

    def _worker(self) -> Worker:
        if self.remote is None:
            return WorkerProcess()
        from benchtui.runners.mini.remote import RemoteWorker  # its pid is the node's

        return RemoteWorker()

    async def _run_worker(self, request: dict[str, Any], served: WorkerSession) -> None:
        report = served.report
        if self.remote is not None:
            from benchtui.runners.mini.remote import run_remote_worker

            executor, listener = self.remote
            return await run_remote_worker(
                executor, listener, request, served, startup_timeout_s=self.profile.startup_timeout_s
            )
        try:
            if self._forkserver is None:
                raise forkserver.WorkerStartFailed("the runner was not entered (`async with runner:`)")
            stream = await self._forkserver.spawn(
                request, env=request["env"], startup_timeout=self.profile.startup_timeout_s
            )
        except forkserver.WorkerStartFailed as exc:
            report.start_error = str(exc)
            return
        channel = EngineChannel(stream)
        try:
            while report.done is None and (message := await channel.receive_record()) is not None:
                await served.handle(message, channel)
        finally:
            with trio.CancelScope(shield=True):
                await self._stop(channel, served)

    async def _stop(self, channel: EngineChannel, served: WorkerSession) -> None:
        """End the worker for sure; then settle the usage it reported before it died (docs/design/invariants.md#f6)."""
        worker, report = served.worker, served.report
        assert isinstance(worker, WorkerProcess)
        if worker.pid is None:  # cancelled before it said hello: wait for its pid (a moment)
            with trio.move_on_after(1.0):
                while worker.pid is None and (message := await channel.receive_record()) is not None:
                    served.late(message)
        if report.done is not None:
            await worker.wait_exit(5.0)  # it kills what it started, then exits
        worker.kill()
        await worker.wait_exit(2.0)
        with trio.move_on_after(0.5):
            while (message := await channel.receive_record()) is not None:
                served.late(message)
        worker.kill()  # in case its hello came only now
        worker.close()
        await channel.aclose()

    def _clean_up(self, files: SessionFiles, secrets: dict[str, str]) -> None:
        keys.redact(files.written, secrets.values())
        volume.remove(files.dir / "workdir", keep=self.profile.keep_workdir)
        shutil.rmtree(files.dir / "bin", ignore_errors=True)
        shutil.rmtree(files.dir / "tmp", ignore_errors=True)


def read_shortlist(workdir: Path) -> tuple[list[Any] | None, str]:
    """(the entries of `shortlist.json`, "") or (None, why there are none). The agent wrote it:
    never followed through a link, never more than SHORTLIST_MAX_BYTES, never a FIFO (`beneath`)."""
    try:
        data = beneath.read_beneath(workdir, SHORTLIST_FILE, SHORTLIST_MAX_BYTES)
    except beneath.Refused as exc:
        return None, str(exc)
    if data is None:
        return None, f"no {SHORTLIST_FILE} committed"
    try:
        entries = json.loads(data)
    except (ValueError, RecursionError):
        return None, f"{SHORTLIST_FILE} is not JSON"
    if not isinstance(entries, list):
        return None, f"{SHORTLIST_FILE} is not a JSON list"
    return entries, ""
