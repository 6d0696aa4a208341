"""The `command` target: any bug-hunting benchmark whose findings a program can check.

The maintainer's own checker verifies each certificate: `verify` is its argv, `{certificate}`
the path of a file holding the certificate as JSON (also given on its standard input). It runs
in the one-shot sandbox the session's runner gives (the tool gate's: a read-only system, no
network, a private /tmp; its own folder and the certificate visible, read-only, without secret
files or benchtui's run dirs), bounded in time, memory, processes and output. Exit 0: confirmed;
1: not a bug; anything else, a timeout or a bound hit: inconclusive, never a bug. The first line
it prints is the verdict's reason. Its `version` runs the same way, and its first line joins the
environment fingerprint.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, ClassVar

import trio

from benchtui.core.bounded import run_bounded
from benchtui.core.checks import Check
from benchtui.core.target import Cause, Ran, TargetKind, TargetProfile, TargetTools, Verdict
from benchtui.core.text import printable
from benchtui.targets.command.profile import PLACEHOLDER, CommandTargetProfile

__all__ = ["CommandTarget", "CommandTargetProfile"]

VERIFIER = "benchtui.targets.command (the campaign's checker)"
SYSTEM_PATH = "/usr/local/bin:/usr/bin:/bin"
VERSION_BYTES = 4096
VERSION_TIMEOUT_S = 30.0


def _first_line(data: bytes) -> str:
    for line in data.decode(errors="replace").splitlines():
        if line.strip():
            return printable(line.strip())[:300]
    return ""


def _blocking(run: Any) -> Ran:
    """An async run from synchronous code (preflight, the fingerprint), inside a Trio run or not."""
    with ThreadPoolExecutor(1) as pool:
        ran: Ran = pool.submit(trio.run, run).result()
    return ran


class CommandTarget(TargetKind):
    Profile: ClassVar[type[TargetProfile]] = CommandTargetProfile
    verifies = True
    verifier = VERIFIER
    profile: CommandTargetProfile

    @property
    def workdir(self) -> Path:
        return self.profile.workdir or Path.cwd()

    def program(self, words: Sequence[str]) -> str | None:
        """The executable of an argv as it runs: a path relative to the checker's folder, or a
        name found there or on the system PATH (the sandbox has no other); None when there is none."""
        first = words[0]
        if "/" in first:
            path = self.workdir / first
            return str(path) if path.is_file() and os.access(path, os.X_OK) else None
        return shutil.which(first, path=f"{self.workdir}{os.pathsep}{SYSTEM_PATH}")

    async def run(
        self,
        words: Sequence[str],
        tools: TargetTools,
        *,
        stdin: bytes,
        timeout_s: float,
        output_bytes: int,
        readable: Sequence[Path] = (),
    ) -> Ran:
        """Run an argv of the checker's, bounded: in the runner's sandbox (its folder and `readable`
        shown), else on this machine."""
        program = self.program(words)
        if program is None:
            return Ran(
                None, b"", f"{words[0]!r} not found in {self.workdir} or on {SYSTEM_PATH}".encode(), "start"
            )
        argv, memory, processes = (
            [program, *words[1:]],
            self.profile.memory_mb << 20,
            self.profile.max_processes,
        )
        if tools.sandbox is None:
            return await run_bounded(
                argv,
                cwd=self.workdir,
                stdin=stdin,
                timeout_s=timeout_s,
                output_bytes=output_bytes,
                memory_bytes=memory,
                max_processes=processes,
            )
        return await tools.sandbox.run(
            argv,
            cwd=self.workdir,
            readable=[self.workdir, *readable],
            stdin=stdin,
            timeout_s=timeout_s,
            output_bytes=output_bytes,
            memory_bytes=memory,
            max_processes=processes,
        )

    async def verify(self, certificate: dict[str, Any], tools: TargetTools) -> Verdict:
        data = json.dumps(certificate).encode()
        with tempfile.TemporaryDirectory(prefix="benchtui-check-") as tmp:
            path = Path(tmp) / "certificate.json"
            await trio.to_thread.run_sync(path.write_bytes, data)
            words = [w.replace(PLACEHOLDER, str(path)) for w in self.profile.verify]
            ran = await self.run(
                words,
                tools,
                stdin=data,
                timeout_s=self.profile.timeout_s,
                output_bytes=self.profile.output_bytes,
                readable=[Path(tmp)],
            )
        return self.judge(ran)

    def judge(self, ran: Ran) -> Verdict:
        """The verdict an ended run of the checker gives."""
        p = self.profile
        said = _first_line(ran.stdout) or _first_line(ran.stderr)
        evidence = {
            "exit": ran.returncode,
            "output": said,
            **({"stopped": ran.stopped} if ran.stopped else {}),
        }
        stops: dict[str, tuple[Cause, str]] = {
            "timeout": ("timeout", f"inconclusive: the checker took longer than {p.timeout_s:g} s"),
            "output": ("tool_error", f"inconclusive: the checker printed more than {p.output_bytes:,} bytes"),
            "processes": (
                "tool_error",
                f"inconclusive: the checker ran into its bound of {p.max_processes} processes",
            ),
            "start": ("tool_missing", f"the checker could not start: {_first_line(ran.stderr) or '?'}"),
        }
        if ran.stopped:
            cause, why = stops.get(
                ran.stopped, ("tool_error", f"inconclusive: the checker was stopped ({ran.stopped})")
            )
            return self._verdict(cause, why, evidence)
        if ran.returncode == 0:
            return self._verdict("violation", said or "the checker confirmed it (exit 0)", evidence)
        if ran.returncode == 1:
            return self._verdict("no_violation", said or "the checker found no bug (exit 1)", evidence)
        code = ran.returncode
        how = f"was killed by signal {-code}" if code is not None and code < 0 else f"exited {code}"
        return self._verdict(
            "tool_error", f"inconclusive: the checker {how}" + (f": {said}" if said else ""), evidence
        )

    def _verdict(self, cause: Cause, reason: str, evidence: dict[str, Any]) -> Verdict:
        return Verdict.of(cause, reason, verifier=VERIFIER, evidence=evidence)

    def preflight(self, tools: TargetTools, *, tasks: list[str] | None, full: bool) -> list[Check]:
        p = self.profile
        if not self.workdir.is_dir():
            return [Check("checker", f"its folder {self.workdir} does not exist ([target] workdir)")]
        found = self.program(p.verify)
        if found is None:
            where = f"in {self.workdir} or on {SYSTEM_PATH}"
            return [Check("checker", f"{p.verify[0]!r} not found or not executable ({where})")]
        checks = [Check("checker", detail=f"{found} {' '.join(p.verify[1:])} in {self.workdir}")]
        if p.version:
            version, problem = self._version(tools)
            checks.append(Check("checker version", problem, version))
        return checks

    def _version(self, tools: TargetTools) -> tuple[str, str]:
        """(the version line the checker prints, "") or ("", the problem). It runs as the checker
        does: in the runner's sandbox, bounded."""
        words = self.profile.version or []
        ran = _blocking(
            lambda: self.run(
                words,
                tools,
                stdin=b"",
                timeout_s=min(self.profile.timeout_s, VERSION_TIMEOUT_S),
                output_bytes=VERSION_BYTES,
            )
        )
        command = " ".join(words)
        if ran.stopped == "start":
            return "", f"{command} could not start: {_first_line(ran.stderr) or '?'}"
        if ran.stopped == "output":  # its first line is all that is kept
            return _first_line(ran.stdout) or "(no output)", ""
        if ran.stopped:
            return "", f"{command} was stopped ({ran.stopped})"
        if ran.returncode != 0:
            said = _first_line(ran.stderr) or _first_line(ran.stdout)
            return "", f"{command} exited {ran.returncode}" + (f": {said}" if said else "")
        return _first_line(ran.stdout) or "(no output)", ""

    def fingerprint(self, tools: TargetTools) -> str:
        if not self.profile.version:
            return ""
        version, problem = self._version(tools)
        return "checker:" + ("?" if problem else "_".join(version.split()))
