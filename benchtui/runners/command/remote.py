"""The command runner's agent on a Ray node (`[executor] kind = "ray"`): the engine's side.

What stays here, on the engine's machine: the session's gateway token (the real key never
leaves the gateway), its meter, the prompt file, and, once the node hands them back, the agent's
log and its certificate lines (verified by the runner's one session flow). What goes to the node:
the AgentCommand (built there, around the node's own copy of the target), the gateway's address,
and, with counted tools or submits, where the node's tool gate asks this engine's (which keeps
the units, the submits' verdicts and the evidence here: `kit.toolgate.remote`).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import trio

from benchtui.core import volume
from benchtui.core.contract import Meter, SessionSpec
from benchtui.core.outcome import SessionFacts
from benchtui.core.target import Toolbox
from benchtui.runners.command.launch import AgentCommand, Ran
from benchtui.runners.command.profile import CommandProfile
from benchtui.runners.kit.evidence import Evidence
from benchtui.runners.kit.ray.callback import CallbackListener
from benchtui.runners.kit.ray.node import Launch, NodeResult
from benchtui.runners.kit.toolgate import counting
from benchtui.runners.kit.verdict import Verification

if TYPE_CHECKING:
    from benchtui.runners.kit.gateway import Gateway
    from benchtui.runners.kit.ray.cluster import RayExecutor


class RayPlacement:
    def __init__(
        self,
        profile: CommandProfile,
        gateway: Gateway,
        executor: RayExecutor,
        listener: CallbackListener,
        toolbox: Toolbox,
    ) -> None:
        self.profile = profile
        self.gateway = gateway
        self.executor = executor
        self.listener = listener
        self.toolbox = toolbox
        self.volumes = not volume.unavailable()
        """Copies on filesystems of their own where this machine can mount them (nodes must too)."""

    async def run_agent(
        self,
        session: SessionSpec,
        meter: Meter,
        command: AgentCommand,
        prompt_file: Path,
        evidence: Evidence | None = None,
        verification: Verification | None = None,
    ) -> Ran:
        from benchtui.runners.kit.ray.cluster import RemoteFailed

        bwrap = self.profile.environment == "bubblewrap"
        async with counting.open_gate(
            session,
            meter,
            self.profile.environment,
            self.toolbox,
            verification=verification,
            evidence=evidence,
            remote=True,
        ) as gate:
            node_gate = counting.on_node(
                gate,
                self.listener,
                sandboxed=bwrap,
                toolbox=self.toolbox,
                tmp_bytes=self.profile.max_disk_mb << 20,
            )
            async with node_gate as spec:
                launch = Launch(
                    build=command,
                    prompt=await trio.to_thread.run_sync(prompt_file.read_text),
                    relay_to=self.gateway.url.removeprefix("http://") if bwrap else None,
                    needs=(str(command.argv0), *command.toolbox.found.values()),
                    gateway=self.gateway.nodes,
                    gate=spec,
                    disk=self.profile.max_disk_mb << 20 if self.volumes else None,
                )
                try:
                    found = await self.executor.run_agent(
                        launch, str(session.environment.resolve()), session.environment_fingerprint
                    )
                except RemoteFailed as exc:
                    return Ran(error=str(exc))
            submitted = gate.submissions.checked if gate.submissions else None
        files = session.session_dir.resolve()
        await trio.to_thread.run_sync(_keep, found, files, files / f"attempt-{session.attempt}.agent.log")
        return Ran(
            fingerprint=found.fingerprint,
            status=found.status,
            code=found.code,
            error=found.error,
            log=found.log,
            certificate_lines=found.certificate_lines,
            collect_problem=found.collect_problem,
            facts=SessionFacts(executor="ray", node=found.node),
            submitted=submitted,
        )


def _keep(found: NodeResult, files: Path, log: Path) -> None:
    """What the node handed back, into sessions/<id>/ (before the attempt ends)."""
    _write(log, found.log, append=True)
    for name, data in found.files.items():
        if name not in ("prompt.md",):
            _write(files / name, data)


def _write(path: Path, data: bytes, *, append: bool = False) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("ab" if append else "wb") as f:
        f.write(data)
