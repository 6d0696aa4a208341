"""Per-session resource bounds on the agent's commands: processes, disk written, output kept.

mini-swe-agent's environments read a command's whole output into memory and keep all of it in
the trajectory (50 MB printed, 50 MB kept), and put no bound on what a command may start or
write. Here each command runs under a watch: its output is read as it comes, keeping a head and
a tail (the middle is counted, never stored); the session's processes (everything under the
worker, a child subreaper) and the disk its copy grew by are checked while it runs. Past a
process or disk limit, everything the session started is killed and the session ends with
exit status `ResourceLimit` (the model's outcome, final); every limit hit is recorded. Imported
only in worker processes.
"""

from __future__ import annotations

import os
import selectors
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from minisweagent.exceptions import InterruptAgentFlow

from benchtui.runners.kit import reaper
from benchtui.runners.kit.resources import ProcessCount, disk_used

POLL_S = 0.1
DISK_POLL_S = 5.0  # a walk of the session copy; also done after every command
MAX_HITS = 50


@dataclass
class Limits:
    max_processes: int
    max_disk_mb: int
    command_output_bytes: int
    trajectory_output_bytes: int
    observation_chars: int
    hits: list[str] = field(default_factory=list)
    """What was cut or stopped, in order (at most MAX_HITS, then a count)."""
    kept: int = 0
    """Raw output bytes kept so far (the trajectory's share)."""

    def hit(self, what: str) -> None:
        if len(self.hits) < MAX_HITS:
            self.hits.append(what)
        elif len(self.hits) == MAX_HITS:
            self.hits.append("(more limits hit, not listed)")


class ResourceLimit(InterruptAgentFlow):
    """A process or disk limit was reached: the session ends (its outcome, final)."""

    def __init__(self, why: str) -> None:
        super().__init__(
            {"role": "exit", "content": why, "extra": {"exit_status": "ResourceLimit", "submission": ""}}
        )


def cut(text: str, keep: int, unit: str = "characters") -> str:
    """`text` within `keep` (head and tail), the cut marked for the model and the log."""
    if len(text) <= keep:
        return text
    head = keep // 2
    return (
        f"{text[:head]}\n[benchtui: {len(text) - keep:,} of {len(text):,} {unit} of output cut here; "
        f"use head, tail, grep or sed -n to see less at a time]\n{text[len(text) - (keep - head) :]}"
    )


class Watched:
    """Runs one command under the session's limits; returns mini-swe-agent's output dict."""

    def __init__(self, limits: Limits, disk_roots: list[Path], cgroup: Path | None) -> None:
        self.limits = limits
        self.processes = ProcessCount(limits.max_processes, cgroup)
        self.disk_roots = disk_roots
        self.disk_baseline = disk_used(*disk_roots)
        self.commands = 0
        self.last_total = 0
        """Bytes the latest command printed (all of them, kept or not)."""

    def run(
        self, args: list[str] | str, *, cwd: str | None, env: dict[str, str] | None, timeout: float
    ) -> dict[str, Any]:
        limits, self.commands = self.limits, self.commands + 1
        keep = max(
            limits.observation_chars,
            min(limits.command_output_bytes, limits.trajectory_output_bytes - limits.kept),
        )
        try:
            process = self._start(args, cwd, env)
        except (OSError, ValueError, TypeError) as exc:  # e.g. a NUL byte in the model's command
            return {
                "output": "",
                "returncode": -1,
                "exception_info": f"An error occurred while executing the command: {exc}",
                "extra": {"exception_type": type(exc).__name__, "exception": str(exc)},
            }
        head, tail, total, stop = bytearray(), bytearray(), 0, ""
        started = last_disk = time.monotonic()
        assert process.stdout is not None  # started with stdout=PIPE
        with selectors.DefaultSelector() as selector:
            selector.register(process.stdout, selectors.EVENT_READ)
            while True:
                if selector.select(POLL_S):
                    chunk = os.read(process.stdout.fileno(), 1 << 16)
                    if not chunk:
                        break
                    total += len(chunk)
                    room = keep // 2 - len(head)
                    head += chunk[:room] if room > 0 else b""
                    tail += chunk[max(room, 0) :]
                    del tail[: max(0, len(tail) - (keep - keep // 2))]
                now = time.monotonic()
                if now - started > timeout:
                    stop = "timeout"
                elif not (stop := self.processes.over()) and now - last_disk > DISK_POLL_S:
                    last_disk, stop = now, self._disk_over()
                if stop:
                    break
        if not stop:
            try:
                process.wait(timeout=max(0.0, timeout - (time.monotonic() - started)))
            except subprocess.TimeoutExpired:  # it closed its output but goes on
                stop = "timeout"
        if stop and stop != "timeout":  # everything the session started, not just this command
            reaper.kill_tree(os.getpid(), include_root=False)
        elif stop:
            reaper.kill_tree(process.pid)
        process.stdout.close()
        returncode = process.wait()
        stop = stop or self.processes.over() or self._disk_over()
        output = self._output(bytes(head), bytes(tail), total, keep)
        self.last_total = total
        if stop == "timeout":
            return {
                "output": output,
                "returncode": -1,
                "exception_info": f"The command timed out after {timeout:g} s and was killed.",
                "extra": {"exception_type": "TimeoutExpired"},
            }
        if stop:
            self.limits.hit(f"command {self.commands}: {stop}")
            raise ResourceLimit(f"resource limit: {stop}")
        return {"output": output, "returncode": returncode, "exception_info": ""}

    @staticmethod
    def _start(args: list[str] | str, cwd: str | None, env: dict[str, str] | None) -> subprocess.Popen[bytes]:
        return subprocess.Popen(
            args,
            shell=isinstance(args, str),
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def _disk_over(self) -> str:
        limit = self.limits.max_disk_mb * 1024 * 1024
        grown = disk_used(*self.disk_roots, stop_at=self.disk_baseline + limit) - self.disk_baseline
        return f"disk limit: the session wrote {grown:,} bytes (at most {limit:,})" if grown > limit else ""

    def _output(self, head: bytes, tail: bytes, total: int, keep: int) -> str:
        kept = len(head) + len(tail)
        self.limits.kept += kept
        text = head.decode("utf-8", errors="replace")
        if total > kept:
            self.limits.hit(f"command {self.commands}: output of {total:,} bytes, {kept:,} kept in the log")
            text += f"\n[benchtui: {total - kept:,} of {total:,} bytes of output cut here]\n"
        return text + tail.decode("utf-8", errors="replace")
