"""Run a program bounded in time, memory, processes and output: for programs fed hostile input
(a target's checker given an agent's certificate), which may print forever, fork without end,
allocate everything or never return.

Time: a deadline, then the whole tree is killed. Memory: RLIMIT_AS. Processes: a pids cgroup where
one can be made (the kernel refuses the fork past the bound), else only the time bound holds.
Output: at most `output_bytes` of stdout and stderr together are kept; a program printing more is
stopped at once (never read without end). The tree is its own session, killed as a group and, in
its cgroup, to the last process.
"""

from __future__ import annotations

import contextlib
import os
import resource
import signal
import subprocess
import uuid
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import trio

from benchtui.core import cgroups
from benchtui.core.target import Ran

CHUNK = 1 << 16
MINIMAL_ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LC_ALL": "C.UTF-8", "HOME": "/tmp", "TMPDIR": "/tmp"}


def _limits(memory_bytes: int, group: Path | None) -> Callable[[], None]:
    def child() -> None:  # in the forked child, before exec: async-signal-safe calls only
        resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        if group is not None:
            with open(group / "cgroup.procs", "w") as procs:
                procs.write(str(os.getpid()))

    return child


async def run_bounded(
    argv: Sequence[str],
    *,
    cwd: Path,
    stdin: bytes = b"",
    timeout_s: float,
    output_bytes: int,
    memory_bytes: int,
    max_processes: int,
    env: Mapping[str, str] | None = None,
) -> Ran:
    """Run `argv` to its end or its first bound; `Ran.stopped` names the bound that stopped it."""
    group = await trio.to_thread.run_sync(
        cgroups.new_pids_cgroup, max_processes, f"benchtui-check-{uuid.uuid4().hex[:8]}-{os.getpid()}"
    )
    stopped = ""
    out: list[bytes] = []
    err: list[bytes] = []
    kept = 0
    process: trio.Process | None = None
    try:
        try:
            process = await trio.lowlevel.open_process(
                list(argv),
                cwd=str(cwd),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
                env=dict(env if env is not None else MINIMAL_ENV),
                preexec_fn=_limits(memory_bytes, group),
            )
        except OSError as exc:
            return Ran(None, b"", f"cannot start {argv[0]}: {exc.strerror or exc}".encode(), "start")

        async def feed() -> None:
            assert process is not None and process.stdin is not None
            with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError):
                await process.stdin.send_all(stdin)
            await process.stdin.aclose()

        async def drain(stream: trio.abc.ReceiveStream | None, into: list[bytes]) -> None:
            nonlocal kept, stopped
            assert stream is not None
            while chunk := await stream.receive_some(CHUNK):
                room = output_bytes - kept
                into.append(bytes(chunk[: max(room, 0)]))
                kept += len(chunk)
                if kept > output_bytes:
                    stopped = stopped or "output"
                    nursery.cancel_scope.cancel()
                    return

        with trio.move_on_after(timeout_s) as deadline:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(feed)
                nursery.start_soon(drain, process.stdout, out)
                nursery.start_soon(drain, process.stderr, err)
            if not stopped:
                await process.wait()
        if deadline.cancelled_caught:
            stopped = stopped or "timeout"
    finally:
        with trio.CancelScope(shield=True):
            if process is not None:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(process.pid, signal.SIGKILL)
                if group is not None:
                    await trio.to_thread.run_sync(cgroups.kill_all, group)
                await process.wait()
                for stream in (process.stdin, process.stdout, process.stderr):
                    if stream is not None:
                        await stream.aclose()
            if group is not None:
                if not stopped and cgroups.refused_forks(group):
                    stopped = "processes"
                await trio.to_thread.run_sync(cgroups.remove_cgroup, str(group))
    assert process is not None
    code = None if stopped else process.returncode
    return Ran(code, b"".join(out), b"".join(err), stopped)
