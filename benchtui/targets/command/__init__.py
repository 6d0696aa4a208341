"""The `command` target: any bug-hunting benchmark whose findings a program can check.

The maintainer's own checker verifies each certificate: `verify` is its argv, `{certificate}`
the path of a file holding the certificate as JSON (also given on its standard input). It runs
in the one-shot sandbox the session's runner gives (the tool gate's: a read-only system, no
network, a private /tmp; its own folder and the certificate visible, read-only), bounded in time,
memory, processes and output. Exit 0: confirmed; 1: not a bug; anything else, a timeout or a
bound hit: inconclusive, never a bug. The first line it prints is the verdict's reason.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any, ClassVar, Literal

import trio
from pydantic import Field, field_validator

from benchtui.core import bounds
from benchtui.core.checks import Check
from benchtui.core.target import Ran, TargetKind, TargetProfile, TargetTools, Verdict
from benchtui.core.text import printable

PLACEHOLDER = "{certificate}"
VERIFIER = "benchtui.targets.command (the campaign's checker)"
SYSTEM_PATH = "/usr/local/bin:/usr/bin:/bin"


class CommandTargetProfile(TargetProfile):
    """Any benchmark whose findings a program can check: the campaign's own checker verifies each
    certificate in the tool gate's one-shot sandbox (docs/guide/verify.md#a-checker-of-your-own)."""

    path_keys: ClassVar[tuple[str, ...]] = ("workdir",)

    kind: Literal["command"] = "command"
    """A target whose certificates the campaign's own checker program verifies."""
    verify: list[str] = Field(min_length=1, max_length=64)
    """The checker's argv; `{certificate}` is replaced by the path of a file holding one
    certificate (JSON; also on its standard input). Exit 0 confirmed, 1 not a bug, else inconclusive."""
    version: list[str] | None = Field(default=None, min_length=1, max_length=64)
    """An argv printing the checker's version: its output is part of the environment fingerprint."""
    timeout_s: float = Field(default=60.0, gt=0, le=3600, allow_inf_nan=False)
    """Per verification; past it the verdict is inconclusive."""
    workdir: Path | None = None
    """The folder the checker runs in, visible to it read-only (default: the campaign file's)."""
    memory_mb: int = Field(default=2048, gt=0, le=1 << 20)
    """Address space of the checker (a bound, not a reservation)."""
    max_processes: int = Field(default=64, gt=0, le=100_000)
    """Processes the checker may run at once (a pids cgroup where one can be made)."""
    output_bytes: int = Field(default=1 << 16, gt=0, le=1 << 30)
    """Output kept of one verification; a checker printing more is stopped (inconclusive)."""

    @field_validator("verify", "version")
    @classmethod
    def _words(cls, value: list[str] | None) -> list[str] | None:
        for word in value or []:
            bounds.check_text(word, "a word of the checker's command")
        return value


def _argv(words: list[str], certificate: str) -> list[str]:
    return [w.replace(PLACEHOLDER, certificate) for w in words]


def _first_line(data: bytes) -> str:
    for line in data.decode(errors="replace").splitlines():
        if line.strip():
            return printable(line.strip())[:300]
    return ""


class CommandTarget(TargetKind):
    Profile: ClassVar[type[TargetProfile]] = CommandTargetProfile
    verifies = True
    verifier = VERIFIER
    profile: CommandTargetProfile

    @property
    def workdir(self) -> Path:
        return self.profile.workdir or Path.cwd()

    async def verify(self, certificate: dict[str, Any], tools: TargetTools) -> Verdict:
        import json

        p = self.profile
        if (
            shutil.which(p.verify[0], path=f"{self.workdir}:{SYSTEM_PATH}") is None
            and not (self.workdir / p.verify[0]).is_file()
        ):
            return self._verdict("tool_missing", f"the checker {p.verify[0]!r} is not there")
        data = json.dumps(certificate).encode()
        with tempfile.TemporaryDirectory(prefix="benchtui-check-") as tmp:
            path = Path(tmp) / "certificate.json"
            await trio.to_thread.run_sync(path.write_bytes, data)
            argv = _argv(p.verify, str(path))
            if tools.sandbox is None:
                from benchtui.core.bounded import run_bounded

                ran = await run_bounded(
                    argv,
                    cwd=self.workdir,
                    stdin=data,
                    timeout_s=p.timeout_s,
                    output_bytes=p.output_bytes,
                    memory_bytes=p.memory_mb << 20,
                    max_processes=p.max_processes,
                )
            else:
                ran = await tools.sandbox.run(
                    argv,
                    cwd=self.workdir,
                    readable=[self.workdir, Path(tmp)],
                    stdin=data,
                    timeout_s=p.timeout_s,
                    output_bytes=p.output_bytes,
                    memory_bytes=p.memory_mb << 20,
                    max_processes=p.max_processes,
                )
        return self._judge(ran)

    def _judge(self, ran: Ran) -> Verdict:
        said = _first_line(ran.stdout) or _first_line(ran.stderr)
        evidence = {"exit": ran.returncode, "output": said}
        if ran.stopped == "timeout":
            why = f"inconclusive: the checker took longer than {self.profile.timeout_s:g} s"
            return self._verdict("timeout", why, evidence)
        if ran.stopped:
            return self._verdict(
                "tool_error", f"inconclusive: the checker was stopped ({ran.stopped})", evidence
            )
        if ran.returncode == 0:
            return self._verdict("violation", said or "the checker confirmed it (exit 0)", evidence)
        if ran.returncode == 1:
            return self._verdict("no_violation", said or "the checker found no bug (exit 1)", evidence)
        return self._verdict(
            "tool_error",
            f"inconclusive: the checker exited {ran.returncode}" + (f": {said}" if said else ""),
            evidence,
        )

    def _verdict(self, cause: Any, reason: str, evidence: dict[str, Any] | None = None) -> Verdict:
        return Verdict.of(cause, reason, verifier=VERIFIER, evidence=evidence or {})

    def preflight(self, tools: TargetTools, *, tasks: list[str] | None, full: bool) -> list[Check]:
        p = self.profile
        if not self.workdir.is_dir():
            return [Check("checker", f"its folder {self.workdir} does not exist ([target] workdir)")]
        found = shutil.which(p.verify[0], path=f"{self.workdir}:{SYSTEM_PATH}") or (
            str(self.workdir / p.verify[0]) if (self.workdir / p.verify[0]).is_file() else None
        )
        if found is None:
            return [Check("checker", f"{p.verify[0]!r} not found (in {self.workdir} or on {SYSTEM_PATH})")]
        checks = [Check("checker", detail=f"{' '.join(p.verify)} in {self.workdir}")]
        if p.version:
            version, problem = self._version()
            checks.append(Check("checker version", problem, version))
        return checks

    def _version(self) -> tuple[str, str]:
        """(the version line the checker prints, "") or ("", the problem)."""
        words = self.profile.version or []
        try:
            done = subprocess.run(
                words,
                cwd=self.workdir,
                capture_output=True,
                timeout=min(self.profile.timeout_s, 30.0),
                stdin=subprocess.DEVNULL,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            return "", f"{' '.join(words)} failed: {exc}"
        if done.returncode != 0:
            return "", f"{' '.join(words)} exited {done.returncode}"
        return _first_line(done.stdout[:4096]) or "(no output)", ""

    def fingerprint(self, tools: TargetTools) -> str:
        if not self.profile.version:
            return ""
        version, problem = self._version()
        return "checker:" + ("?" if problem else "_".join(version.split()))
