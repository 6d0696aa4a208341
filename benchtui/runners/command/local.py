"""The command runner's agent on this machine: a copy of the target in the session's folder, the
agent under its watcher (bubblewrap or the host), its output streamed into a bounded log, its
processes and disk watched, and what it leaves in its workdir collected without trusting it."""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import signal
import subprocess
from functools import partial
from pathlib import Path

import trio

from benchtui.core import volume
from benchtui.core import workspace as environment
from benchtui.core.contract import Meter, SessionSpec
from benchtui.core.target import Toolbox
from benchtui.runners.command.launch import AgentCommand, Ran
from benchtui.runners.command.profile import CommandProfile
from benchtui.runners.kit import collect, reaper, resources
from benchtui.runners.kit.agentlog import CHUNK, MAX_LOG_BYTES, CappedLog
from benchtui.runners.kit.evidence import Evidence
from benchtui.runners.kit.gateway import Gateway
from benchtui.runners.kit.toolgate import counting
from benchtui.runners.kit.verdict import Verification

POLL_S = 0.2
CGROUP_POLL_S = 1.0
"""With a pids cgroup the kernel refuses forks past the limit; the poll only notices them and
ends the session, so it can be slower (64 sessions polling 5 times a second took ~10% of the
loop the TUI shares)."""
DISK_POLL_S = 5.0
CGROUP_OVERHEAD = 16
"""Tasks of the watcher, bwrap, the relay and their shells, beyond the agent's own."""
DRAIN_S = 2.0
"""How long the output of an ended agent is still read (what it left behind may hold the pipe)."""


def cgroup_name() -> str:
    """The agent's pids cgroup: its owner's pid last, as `resources` sweeps groups whose owner is
    gone; a random name, not the session's (which names its model)."""
    return f"benchtui-agent-{secrets.token_hex(6)}-{os.getpid()}"


class LocalPlacement:
    def __init__(self, profile: CommandProfile, gateway: Gateway, toolbox: Toolbox) -> None:
        self.profile = profile
        self.gateway = gateway
        self.toolbox = toolbox
        self.volumes = not volume.unavailable()
        """Each session's copy on a filesystem of its own (`core.volume`: the kernel bounds its disk)."""

    async def run_agent(
        self,
        session: SessionSpec,
        meter: Meter,
        command: AgentCommand,
        prompt_file: Path,
        evidence: Evidence | None = None,
        verification: Verification | None = None,
    ) -> Ran:
        files = session.session_dir.resolve()
        workdir, log = files / "workdir", files / f"attempt-{session.attempt}.agent.log"
        try:
            disk = self.profile.max_disk_mb << 20 if self.volumes else None
            try:
                fingerprint = await trio.to_thread.run_sync(
                    _copy, session.environment.resolve(), workdir, disk
                )
            except volume.VolumeError as exc:  # not the model's doing: retried
                return Ran(error=f"the session's copy could not be made: {exc}")
            cgroup = await trio.to_thread.run_sync(
                resources.new_pids_cgroup, self.profile.max_processes + CGROUP_OVERHEAD, cgroup_name()
            )
            try:
                async with counting.open_gate(
                    session,
                    meter,
                    self.profile.environment,
                    self.toolbox,
                    workdir=workdir,
                    verification=verification,
                    evidence=evidence,
                ) as gate:
                    lifeline, hold = os.pipe()  # see sandbox.WATCH
                    try:
                        argv, env = command(
                            workdir, prompt_file, self.gateway.socket_path, lifeline, gate=gate.sandbox,
                            cgroup=cgroup, home=files / "home",
                        )  # fmt: skip
                        ran = Ran(status="Accepted")  # what is left when an accepted submit stops it

                        async def agent() -> str:
                            nonlocal ran
                            ran = await run_watched(
                                argv, env, workdir, log, lifeline, self.profile, cgroup, polled=disk is None
                            )
                            return ran.status

                        # An accepted `submit` ends the session: the agent is stopped there.
                        await counting.until_accepted(gate, agent)
                    finally:
                        os.close(hold)
                    ran.submitted = gate.submissions.checked if gate.submissions else None
            finally:
                if cgroup is not None:
                    with trio.CancelScope(shield=True):
                        await trio.to_thread.run_sync(resources.remove_cgroup, str(cgroup))
            ran.fingerprint = fingerprint
            found = await trio.to_thread.run_sync(collect.certificate_lines, workdir)
            ran.certificate_lines, ran.collect_problem = found.lines, found.problem
            ran.log = await trio.to_thread.run_sync(_read_log, log)
            return ran
        finally:
            with trio.CancelScope(shield=True):
                await trio.to_thread.run_sync(_remove, files, self.profile.keep_workdir)


def _copy(target: Path, workdir: Path, disk: int | None) -> str:
    environment.make_session_copy(target, workdir, disk)
    return environment.fingerprint(workdir)


def _read_log(log: Path) -> bytes:
    with open(log, "rb") as f:
        return f.read(MAX_LOG_BYTES)


def _remove(files: Path, keep: bool) -> None:
    """The session's copy (`keep`: left as a plain folder) and the unsandboxed agent's home."""
    volume.remove(files / "workdir", keep=keep)
    if not keep:
        for name in ("home", "bin"):
            shutil.rmtree(files / name, ignore_errors=True)


async def run_watched(
    argv: list[str],
    env: dict[str, str] | None,
    workdir: Path,
    log: Path,
    lifeline: int,
    profile: CommandProfile,
    cgroup: Path | None,
    *,
    polled: bool = True,
) -> Ran:
    """Run the agent to its end under its bounds; on cancellation (kill, wall time, stop) freeze
    and kill its tree. Its output goes through a pipe into a CappedLog, read on the event loop in
    CHUNK pieces (never whole). `polled`: the copy's disk is watched here (not the kernel's
    bound: no volume)."""
    ran = Ran()
    with CappedLog(log) as out:
        try:
            process = await trio.lowlevel.open_process(
                argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env,
                cwd=workdir, start_new_session=True, pass_fds=(lifeline,),
            )  # fmt: skip
        finally:
            os.close(lifeline)  # the watcher holds the read end now; we keep only the write end
        try:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(_pump, process, out)
                watch = trio.CancelScope()
                nursery.start_soon(_watch, process, workdir if polled else None, profile, cgroup, ran, watch)
                try:
                    code = await process.wait()
                finally:
                    watch.cancel()
                    if process.returncode is None:  # cancelled: not reaped yet, its pid is its own
                        reaper.kill_tree(process.pid)
                        with trio.CancelScope(shield=True), trio.move_on_after(5):
                            await process.wait()
                    with contextlib.suppress(ProcessLookupError, PermissionError):
                        os.killpg(process.pid, signal.SIGKILL)  # what it left in its session
                    nursery.cancel_scope.deadline = trio.current_time() + DRAIN_S
        finally:
            assert process.stdout is not None
            with trio.CancelScope(shield=True):
                await process.stdout.aclose()
    ran.code, ran.status = code, f"exit {code}"
    return ran


async def _pump(process: trio.Process, out: CappedLog) -> None:
    assert process.stdout is not None
    while chunk := await process.stdout.receive_some(CHUNK):
        out.write(chunk)


async def _watch(
    process: trio.Process,
    workdir: Path | None,
    profile: CommandProfile,
    cgroup: Path | None,
    ran: Ran,
    scope: trio.CancelScope,
) -> None:
    """The processes (every CGROUP_POLL_S a pids cgroup's refused forks, else every POLL_S a
    /proc count), every DISK_POLL_S the disk the copy (`workdir`; None: a volume, the kernel bounds
    it) grew by; past a limit, the agent's tree is killed."""
    count = resources.ProcessCount(profile.max_processes, cgroup, root=process.pid)
    limit = profile.max_disk_mb << 20
    with contextlib.closing(count), scope:
        baseline = await trio.to_thread.run_sync(resources.disk_used, workdir) if workdir else 0
        next_disk = trio.current_time() + DISK_POLL_S
        while True:
            await trio.sleep(POLL_S if cgroup is None else CGROUP_POLL_S)
            why = count.over()
            if not why and workdir is not None and trio.current_time() >= next_disk:
                used = await trio.to_thread.run_sync(
                    partial(resources.disk_used, workdir, stop_at=baseline + limit)
                )
                grown = used - baseline
                next_disk = trio.current_time() + DISK_POLL_S
                if grown > limit:
                    why = f"disk limit: the session copy grew by more than {profile.max_disk_mb} MB"
            if why:
                ran.limits.append(why)
                reaper.kill_tree(process.pid)
                return
