"""MiniSweRunner: the engine's side of a mini-swe-agent session (Trio; never imports litellm).

A session is a worker process forked from the pre-warmed zygote. The engine answers its
authorisation requests with the meter (docs/design/invariants.md#f5), charges its reported usage at campaign prices (docs/design/invariants.md#f6),
and, when the session ends in any way (done, killed, cancelled, wall time), freezes and kills
the worker's whole process tree, including commands the agent left running.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import stat
import time
from contextlib import AsyncExitStack
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, ClassVar, Self

import trio

from benchtui.core.contract import (
    PROBLEM_REDUCTIONS,
    Check,
    Meter,
    RunnerKind,
    RunnerProfile,
    SessionOutcome,
    SessionSpec,
    Usage,
)
from benchtui.core.executor import ExecutorConfig
from benchtui.runners.kit import reaper
from benchtui.runners.kit import secrets as keys
from benchtui.runners.kit.toolgate import counting
from benchtui.runners.kit.verdict import WorkerReport, judge
from benchtui.runners.mini import forkserver, processes
from benchtui.runners.mini import preflight as checks
from benchtui.runners.mini.profile import TRIAGE_TEMPLATE, MiniSweProfile, load_templates
from benchtui.runners.mini.protocol import EngineChannel
from benchtui.targets.problem_reductions import resolve_pred
from benchtui.targets.problem_reductions.tasks import rule_list

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
        if self.alive():
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

    @classmethod
    def preflight(
        cls, profile: Any, *, tasks: list[str] | None, full: bool, target: str = PROBLEM_REDUCTIONS
    ) -> list[Check]:
        return checks.preflight(profile, tasks=tasks, full=full)

    @classmethod
    def ping_profile(cls, profile: Any) -> dict[str, Any] | None:
        return checks.ping_profile(profile)

    runs_triage = True

    @classmethod
    def rule_inventory(cls, profile: Any, environment: Path) -> list[str]:
        """Shortlist campaigns: every rule of `pred list --rules`, named as
        certificates name them (`SOURCE -> TARGET`); ValueError with the problem."""
        if TRIAGE_TEMPLATE not in load_templates(profile.templates_path):
            raise ValueError(f"templates {profile.templates_path} have no {TRIAGE_TEMPLATE}")
        rules, problem = rule_list(resolve_pred(profile.pred))
        if problem:
            raise ValueError(problem)
        return [f"{source} -> {target}" for source, target in rules]

    def __init__(
        self, profile: MiniSweProfile, *, run_dir: Path, executor: ExecutorConfig | None = None
    ) -> None:
        super().__init__(profile, run_dir=run_dir, executor=executor)
        self.profile: MiniSweProfile = profile
        self.executor: ExecutorConfig | None = executor
        self.remote: Any = None  # (RayExecutor, CallbackListener) once entered with kind = "ray"
        found = resolve_pred(profile.pred)
        self.pred = found if os.path.isabs(found) else None
        self._forkserver: forkserver.Forkserver | None = None
        self._services = AsyncExitStack()

    async def __aenter__(self) -> Self:
        nursery = await self._services.enter_async_context(trio.open_nursery())
        self._services.callback(nursery.cancel_scope.cancel)  # runs first on exit: stops the zygote
        self._forkserver = forkserver.Forkserver(nursery)
        if self.executor is not None and self.executor.remote:  # workers run on nodes, calling back
            from benchtui.runners.kit.ray.cluster import open_ray
            from benchtui.runners.mini.remote import CallbackListener

            executor = await self._services.enter_async_context(open_ray(self.executor))
            listener = CallbackListener()
            await nursery.start(listener.serve, executor.gateway_host)
            self.remote = (executor, listener)
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        self._forkserver = None
        await self._services.aclose()

    async def run(self, session: SessionSpec, meter: Meter) -> SessionOutcome:
        if self.pred is None:
            return SessionOutcome(
                "error",
                reason=f"pred not found ({self.profile.pred!r}): install it "
                "(cargo install) or set the profile's `pred` to its path",
                infra_error=True,  # not the model's doing: retried on --resume once pred is there
            )
        key_name = session.model.api_key_env or self.profile.api_key_env
        secrets = keys.collect(filter(None, [key_name]))
        if key_name and key_name not in secrets:
            return SessionOutcome("error", reason=f"API key variable {key_name} is not set", infra_error=True)
        files = SessionFiles(session.session_dir.resolve(), session.attempt)
        files.dir.mkdir(parents=True, exist_ok=True)
        report = WorkerReport(max_output_tokens=session.model.max_output_tokens)
        request = self._request(session, files, secrets, key_name)
        try:
            # On a Ray node the gate's unix socket is out of reach: tools are not counted there
            # (said at start, see preflight.unenforced).
            gated = session if self.remote is None else None
            async with counting.tool_gate(gated, meter, self.profile.environment, self.pred) as gate:
                request["paths"]["gate"] = gate
                await self._run_worker(request, meter, report)
            committed = None
            if session.triage is not None:  # read before the workdir is cleaned up
                committed = await trio.to_thread.run_sync(read_shortlist, files.dir / "workdir")
            outcome = await judge(
                report,
                fingerprint=session.environment_fingerprint,
                pred=self.pred,
                timeout=self.profile.verify_timeout_s,
                max_certificates=0 if session.triage is not None else self.profile.max_certificates,
                certificates_file=files.attempt_file("certificates.json"),
                admit=counting.submits(session.limits, meter),
            )
            outcome = counting.explain(outcome, session.limits, meter)
            if session.triage is not None and not outcome.infra_error:
                outcome = replace(outcome, shortlist=committed[0], reason=committed[1] or outcome.reason)
            return replace(outcome, reason=keys.scrub(outcome.reason, secrets.values()))
        finally:
            with trio.CancelScope(shield=True):
                await trio.to_thread.run_sync(self._clean_up, files, secrets)
                await trio.to_thread.run_sync(processes.remove_cgroup, report.cgroup)  # the worker is gone

    def _request(
        self, session: SessionSpec, files: SessionFiles, secrets: dict[str, str], key_name: str | None
    ) -> dict[str, Any]:
        p, m = self.profile, session.model
        triage = session.triage
        return {
            # A shortlist campaign's triage: its own instance template, the source only (no pred).
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
                "pred": self.pred if triage is None else None,
            },
            "count_actions": bool(session.limits),
            "budget": counting.describe(session.limits),
            "env": keys.public_environment(filter(None, [key_name])),
            "secrets": secrets,
            "api_key": secrets.get(key_name) if key_name else None,
        }

    async def _run_worker(self, request: dict[str, Any], meter: Meter, report: WorkerReport) -> None:
        if self.remote is not None:
            from benchtui.runners.mini.remote import run_remote_worker

            return await run_remote_worker(self, *self.remote, request, meter, report)
        try:
            if self._forkserver is None:
                raise forkserver.WorkerStartFailed("the runner was not entered (`async with runner:`)")
            stream = await self._forkserver.spawn(
                request, env=request["env"], startup_timeout=self.profile.startup_timeout_s
            )
        except forkserver.WorkerStartFailed as exc:
            report.start_error = str(exc)
            return
        channel, worker = EngineChannel(stream), WorkerProcess()
        try:
            while report.done is None and (message := await channel.receive()) is not None:
                await self._handle(message, channel, worker, meter, report)
        finally:
            with trio.CancelScope(shield=True):
                await self._stop(channel, worker, meter, report)

    async def _handle(
        self,
        message: dict[str, Any],
        channel: EngineChannel,
        worker: WorkerProcess,
        meter: Meter,
        report: WorkerReport,
    ) -> None:
        kind = message.get("t")
        if kind == "authorise":
            started = time.perf_counter()
            prompt_tokens = _count(message.get("prompt_tokens"))
            ok = prompt_tokens is not None and await meter.authorise(meter.worst_case_usd(prompt_tokens))
            report.prompt_tokens = prompt_tokens or 0
            report.authorisations += 1
            report.meter_wait_s += time.perf_counter() - started
            await channel.send("authorised", ok=ok)
        elif kind == "usage":
            _settle(message, meter, report)
        elif kind == "use":  # a shell action (the only unit a worker asks for itself)
            spent = await meter.use("shell_actions")
            await channel.send("used", ok=spent is None, message=counting.refusal(meter.limits, spent))
        elif kind == "step":
            meter.progress(str(message.get("note", ""))[:200])
        elif kind == "hello":
            worker.adopt(int(message["pid"]))
            meter.progress(f"worker {worker.pid} started")
        elif kind == "copy":
            report.copy_fingerprint = str(message.get("fingerprint", ""))
        elif kind == "prompt":
            report.prompt_sha256 = str(message.get("sha256", ""))
        elif kind == "cgroup":
            report.cgroup = str(message.get("path") or "") or None
        elif kind == "done":
            report.done = message

    async def _stop(
        self, channel: EngineChannel, worker: WorkerProcess, meter: Meter, report: WorkerReport
    ) -> None:
        """End the worker for sure; then settle the usage it reported before it died (docs/design/invariants.md#f6)."""
        if worker.pid is None:  # cancelled before it said hello: wait for its pid (a moment)
            with trio.move_on_after(1.0):
                while worker.pid is None and (message := await channel.receive()) is not None:
                    await self._late(message, worker, meter, report)
        if report.done is not None:
            await worker.wait_exit(5.0)  # it kills what it started, then exits
        worker.kill()
        await worker.wait_exit(2.0)
        with trio.move_on_after(0.5):
            while (message := await channel.receive()) is not None:
                await self._late(message, worker, meter, report)
        worker.kill()  # in case its hello came only now
        worker.close()
        await channel.aclose()

    async def _late(
        self, message: dict[str, Any], worker: WorkerProcess, meter: Meter, report: WorkerReport
    ) -> None:
        if message.get("t") == "hello" and worker.pid is None:
            worker.adopt(int(message["pid"]))
        elif message.get("t") == "usage":
            _settle(message, meter, report)

    def _clean_up(self, files: SessionFiles, secrets: dict[str, str]) -> None:
        keys.redact(files.written, secrets.values())
        if not self.profile.keep_workdir:
            shutil.rmtree(files.dir / "workdir", ignore_errors=True)
        shutil.rmtree(files.dir / "bin", ignore_errors=True)
        shutil.rmtree(files.dir / "tmp", ignore_errors=True)


def read_shortlist(workdir: Path) -> tuple[list[Any] | None, str]:
    """(the entries of `shortlist.json`, "") or (None, why there are none). The agent wrote it:
    never followed through a link, never more than SHORTLIST_MAX_BYTES, never a FIFO."""
    path = workdir / SHORTLIST_FILE
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return None, f"no {SHORTLIST_FILE} committed"
    except OSError as exc:
        return None, f"{SHORTLIST_FILE}: cannot read it ({exc.strerror or exc})"
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return None, f"{SHORTLIST_FILE} is not a regular file"
        data = os.read(fd, SHORTLIST_MAX_BYTES + 1)
    finally:
        os.close(fd)
    if len(data) > SHORTLIST_MAX_BYTES:
        return None, f"{SHORTLIST_FILE} is larger than {SHORTLIST_MAX_BYTES} bytes"
    try:
        entries = json.loads(data)
    except (ValueError, RecursionError):
        return None, f"{SHORTLIST_FILE} is not JSON"
    if not isinstance(entries, list):
        return None, f"{SHORTLIST_FILE} is not a JSON list"
    return entries, ""


def _count(value: Any) -> int | None:
    """A token count as the worker must send it: a non-negative int (never clamped)."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _settle(message: dict[str, Any], meter: Meter, report: WorkerReport) -> None:
    """Charge one attempt's usage report; one that is unreadable is charged the worst case that
    was authorised for the attempt (docs/design/invariants.md#f6: never under), and every worst-case charge says why."""
    tokens = _count(message.get("input_tokens")), _count(message.get("output_tokens"))
    why = message.get("worst_case")
    if None in tokens:
        why = f"unreadable usage report: {json.dumps(message, default=str)[:120]}"
        tokens = report.prompt_tokens, report.max_output_tokens
    if why:
        report.worst_case.append(str(why)[:300])
    # A failed attempt the provider surely did not bill (refused, a 429) was no model call either.
    unserved = message.get("failed") is True and not why and tokens == (0, 0)
    meter.charge(Usage(*tokens), served=not unserved)
