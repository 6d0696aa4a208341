"""mini-swe-agent's local and bubblewrap environments, each command run under the session's limits.

Only `execute` differs from mini-swe-agent's: the same command line, run by `limits.Watched`
instead of `subprocess.run`, which read all output into memory, kept all of it, and watched
nothing else. bubblewrap: the session's copy (`copy`, a host path) is bound at WORKDIR, the
directory the agent works in (`cwd`), and bwrap reads its options from a pipe (`sealed`), so
nothing the agent reads names the host path of its session. Imported only in worker processes.
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Callable
from typing import Any

from minisweagent.environments.extra.bubblewrap import BubblewrapEnvironment
from minisweagent.environments.local import LocalEnvironment

from benchtui.runners.kit.bubblewrap import HOSTNAME, WORKDIR, sealed
from benchtui.runners.mini.resources import Watched


def not_a_command(command: Any) -> dict[str, Any] | None:
    """The output for a `command` that is no string (a model may send a number, a list, null):
    nothing is run, the model is told, the session goes on (never a crash of the worker)."""
    if isinstance(command, str):
        return None
    return {
        "output": "",
        "returncode": -1,
        "exception_info": f"The command must be a string, not {type(command).__name__}: nothing was run.",
    }


def measured(watched: Watched, started: float, output: dict[str, Any]) -> dict[str, Any]:
    """The output with what the evidence ledger records of the action (its time, its raw size)."""
    extra = {**(output.get("extra") or {}), "duration_s": round(time.monotonic() - started, 3)}
    return {**output, "extra": extra | {"raw_bytes": watched.last_total}}


Admit = Callable[[], dict[str, Any] | None]
"""Asks for the session's `shell_actions` unit before a command runs: None, or the refusal output."""
FINISH = "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"


def admitted(admit: Admit | None, command: Any) -> dict[str, Any] | None:
    """None when the command may run. The command that ends the session runs nothing: it is the
    submission, never counted as a shell action (the agent can always finish)."""
    if (refused := not_a_command(command)) is not None:
        return refused
    if admit is None or command.strip() == FINISH:
        return None
    return admit()


class BoundedLocalEnvironment(LocalEnvironment):
    def __init__(self, *, watched: Watched, admit: Admit | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.watched = watched
        self.admit = admit

    def execute(self, action: dict[str, Any], cwd: str = "", *, timeout: int | None = None) -> dict[str, Any]:
        if (refused := admitted(self.admit, action.get("command", ""))) is not None:
            return refused
        started = time.monotonic()
        output = self.watched.run(
            action.get("command", ""),
            cwd=cwd or self.config.cwd or os.getcwd(),
            env=os.environ | self.config.env,
            timeout=timeout or self.config.timeout,
        )
        self._check_finished(output)
        return measured(self.watched, started, output)


class BoundedBubblewrapEnvironment(BubblewrapEnvironment):
    def __init__(self, *, watched: Watched, copy: str, admit: Admit | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.watched = watched
        self.copy = copy  # not in the config: the templates' variables and the trajectory show that
        self.admit = admit

    def execute(self, action: dict[str, Any], cwd: str = "", *, timeout: int | None = None) -> dict[str, Any]:
        if (refused := admitted(self.admit, action.get("command", ""))) is not None:
            return refused
        options = [*self.config.wrapper_args, "--bind", self.copy, WORKDIR, "--chdir", cwd or self.config.cwd]
        for key, value in self.config.env.items():
            options += ["--setenv", key, value]
        bwrap = [shutil.which("env") or "/usr/bin/env", "-i", self.config.executable]
        args = sealed(bwrap, options, ["bash", "-c", action.get("command", "")])
        started = time.monotonic()
        output = self.watched.run(args, cwd=None, env=None, timeout=timeout or self.config.timeout)
        self._check_finished(output)
        return measured(self.watched, started, output)

    def get_template_vars(self, **kwargs: Any) -> dict[str, Any]:
        """As the sandbox shows things: its host name, no bwrap options (host paths)."""
        found = super().get_template_vars(**kwargs)
        return {k: v for k, v in found.items() if k not in ("wrapper_args", "executable")} | {
            "node": HOSTNAME
        }
