"""The command runner on a remote executor (`[executor] kind = "ray"`): the engine's side.

What stays here, on the engine's machine: the session's gateway token (the real key never
leaves the gateway), its meter, the prompt file, and, once the node hands them back, the agent's
log, its certificates and their verification with `pred`. What goes to the node: the agent's
command line (built there, around the node's own copy of the target) and the gateway's address.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

import trio

from benchtui.core.contract import Meter, SessionOutcome, SessionSpec
from benchtui.runners.command import sandbox
from benchtui.runners.command.gateway.session import upstream_model
from benchtui.runners.command.profile import CommandProfile
from benchtui.runners.kit import secrets as keys
from benchtui.runners.kit.bubblewrap import local_bin
from benchtui.runners.kit.ray.node import Launch, NodeResult
from benchtui.runners.kit.toolgate import counting
from benchtui.runners.kit.verdict import WorkerReport, judge
from benchtui.targets.problem_reductions import find_blocks

if TYPE_CHECKING:
    from benchtui.runners.command.gateway import Gateway
    from benchtui.runners.kit.ray.cluster import RayExecutor


async def run_remote(
    profile: CommandProfile,
    gateway: Gateway,
    pred: str | None,
    executor: RayExecutor,
    session: SessionSpec,
    meter: Meter,
) -> SessionOutcome:
    from benchtui.runners.kit.ray.cluster import RemoteFailed

    argv0 = sandbox.resolve(profile.command[0])
    if argv0 is None:
        return _infra(f"agent CLI {profile.command[0]!r} not found (see the README: agent CLIs)")
    if pred is None:
        return _infra(f"pred not found ({profile.pred!r}): install it or set the profile's `pred`")
    key_name = session.model.api_key_env or profile.api_key_env
    secrets = keys.collect(filter(None, [key_name]))
    if key_name and key_name not in secrets:
        return _infra(f"API key variable {key_name} is not set")
    files = session.session_dir.resolve()
    log = files / f"attempt-{session.attempt}.agent.log"
    prompt = profile.render_prompt(session.task)
    await trio.to_thread.run_sync(_write, files / f"attempt-{session.attempt}.prompt.md", prompt.encode())
    bwrap = profile.environment == "bubblewrap"
    values = {
        "{prompt}": prompt,
        "{task}": session.task or "",
        "{gateway}": f"http://127.0.0.1:{sandbox.INNER_PORT}" if bwrap else gateway.url,
        "{model}": upstream_model(session.model.name),
    }
    with gateway.session(meter, session.model, secrets.get(key_name or "")) as grant:
        launch = Launch(
            build=partial(agent_command, profile, argv0, values, grant.token, pred),
            prompt=prompt,
            relay_to=gateway.url.removeprefix("http://") if bwrap else None,
            needs=(str(argv0), pred),
        )
        try:
            found = await executor.run_agent(
                launch, str(session.environment.resolve()), session.environment_fingerprint
            )
        except RemoteFailed as exc:
            return _infra(str(exc))
    await trio.to_thread.run_sync(_keep, found, files, log, secrets)
    where = {"executor": "ray", "node": found.node}
    if found.error:
        return SessionOutcome("error", reason=found.error, infra_error=True, extra=where)
    blocks = find_blocks(found.log.decode(errors="replace"))
    blocks += [line for line in found.certificate_lines if _is_object(line)]
    report = WorkerReport(
        copy_fingerprint=found.fingerprint,
        prompt_sha256=hashlib.sha256(prompt.encode()).hexdigest(),
        done={"steps": grant.authorised, "exit_status": found.status, "blocks": blocks},
    )
    outcome = await judge(
        report,
        fingerprint=session.environment_fingerprint,
        pred=pred,
        timeout=profile.verify_timeout_s,
        max_certificates=profile.max_certificates,
        certificates_file=files / f"attempt-{session.attempt}.certificates.json",
        admit=counting.submits(session.limits, meter),
    )
    outcome = counting.explain(outcome, session.limits, meter)
    return dataclasses.replace(outcome, extra={**outcome.extra, **where})


def agent_command(
    profile: CommandProfile,
    argv0: Path,
    values: dict[str, str],
    token: str,
    pred: str,
    workdir: Path,
    prompt_file: Path,
    socket_dir: Path,
    lifeline: int,
) -> tuple[list[str], dict[str, str] | None]:
    """The agent's argv and environment on the node (the same as a local session's)."""
    values = {**values, "{prompt_file}": str(prompt_file), "{workdir}": str(workdir)}
    argv, env = profile.invocation(argv0, values, token)
    if profile.environment != "bubblewrap":
        home = workdir.parent / "home"
        home.mkdir(exist_ok=True)
        return argv, sandbox.local_env(home, [local_bin(workdir.parent, pred)], env)
    binds = [*sandbox.mounts_for(argv0), prompt_file]
    wrapped = sandbox.bubblewrap_argv(
        argv, workdir=workdir, socket_dir=socket_dir, env=env, pred=pred, binds=binds, lifeline=lifeline
    )
    return wrapped, {}


def _keep(found: NodeResult, files: Path, log: Path, secrets: dict[str, str]) -> None:
    """What the node handed back, into sessions/<id>/ (before the attempt ends)."""
    _write(log, found.log, append=True)
    for name, data in found.files.items():
        if name not in ("prompt.md",):
            _write(files / name, data)
    keys.redact([log, *files.glob("*.json")], secrets.values())


def _write(path: Path, data: bytes, *, append: bool = False) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("ab" if append else "wb") as f:
        f.write(data)


def _is_object(line: str) -> bool:
    try:
        return isinstance(json.loads(line), dict)
    except ValueError:
        return False


def _infra(reason: str) -> SessionOutcome:
    return SessionOutcome("error", reason=reason, infra_error=True)  # not the model's doing: retried
