"""What a command-runner session hands its placement: how to build the agent's command line where
it runs, and what comes back once it ended (the same record from this machine and from a node)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchtui.core.outcome import SessionFacts
from benchtui.core.target import Toolbox, Verdict
from benchtui.runners.command import sandbox
from benchtui.runners.command.profile import CommandProfile
from benchtui.runners.kit.bubblewrap import WORKDIR, local_bin

NOT_STARTED = (126, 127)
"""Exit statuses of a shell that could not run the agent's executable (not executable, not found)."""


@dataclass(frozen=True)
class AgentCommand:
    """The agent's argv and environment as a function of where its placement put things (picklable:
    a Ray node calls it with its own paths)."""

    profile: CommandProfile
    argv0: Path
    values: dict[str, str]
    """Placeholders known before the placement: {prompt}, {task}, {gateway}, {model}."""
    token: str
    toolbox: Toolbox
    """The target's programs, on the agent's PATH."""

    def __call__(
        self,
        workdir: Path,
        prompt_file: Path,
        socket: Path,
        lifeline: int,
        *,
        gate: dict[str, Any] | None = None,
        cgroup: Path | None = None,
        home: Path | None = None,
        gateway: str | None = None,
    ) -> tuple[list[str], dict[str, str] | None]:
        """`gateway`: the address the agent calls, where it differs from the one known before the
        placement (an unsandboxed agent on a Ray node calls its node's relay). In bubblewrap,
        `{workdir}` and `{prompt_file}` are where the sandbox shows them (the same for every
        session), and `prompt_file` must be a host path that names no session (it is bound)."""
        profile = self.profile
        sandboxed = profile.environment == "bubblewrap"
        if sandboxed:  # as the sandbox shows them: the same for every session
            values = {**self.values, "{prompt_file}": sandbox.PROMPT_FILE, "{workdir}": WORKDIR}
        else:
            values = {**self.values, "{prompt_file}": str(prompt_file), "{workdir}": str(workdir)}
        if gateway is not None and not sandboxed:
            values["{gateway}"] = gateway
        argv, env = profile.invocation(self.argv0, values, self.token)
        if not sandboxed:
            home = home or workdir.parent / "home"
            home.mkdir(parents=True, exist_ok=True)
            shims = [Path(gate["shims"])] if gate else []
            path = [*shims, local_bin(home.parent, self.toolbox)]
            return sandbox.watched(argv, lifeline, cgroup), sandbox.local_env(home, path, env)
        binds = [*sandbox.mounts_for(self.argv0), *sandbox.named_files(argv[1:], workdir)]
        wrapped = sandbox.bubblewrap_argv(
            argv,
            workdir=workdir,
            socket=socket,
            prompt_file=prompt_file,
            env=env,
            toolbox=self.toolbox,
            binds=binds,
            lifeline=lifeline,
            gate=gate,
            cgroup=cgroup,
            tmp_bytes=profile.max_disk_mb << 20,
        )
        return wrapped, {}


@dataclass
class Ran:
    """An agent's run, wherever it was placed."""

    fingerprint: str = ""
    """Of the session's copy of the target, made where the agent ran."""
    status: str = ""
    code: int | None = None
    error: str = ""
    """Set when the placement could not start the agent (an infrastructure error, retried)."""
    log: bytes = b""
    """This attempt's output (bounded: what its log file holds)."""
    certificate_lines: list[str] = field(default_factory=list)
    collect_problem: str = ""
    """What was wrong with the files collected from the workdir (the model's outcome)."""
    limits: list[str] = field(default_factory=list)
    """Process or disk limits hit (then the agent was stopped)."""
    facts: SessionFacts = field(default_factory=SessionFacts)
    """Where it ran (a Ray node), for the session's details."""
    submitted: list[tuple[dict[str, Any] | None, Verdict]] | None = None
    """What `submit FILE` verified while the agent ran (on this machine or, through its gate, a node)."""
