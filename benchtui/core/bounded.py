"""Run a program bounded in time, memory, processes and output: for programs fed hostile input
(a target's checker given an agent's certificate), which may print forever, fork without end,
allocate everything or never return.

Time: a deadline, then the whole tree is killed. Memory: RLIMIT_AS. Processes: a pids cgroup where
one can be made (the kernel refuses the fork past the bound), else only the time bound holds.
Output: at most `output_bytes` of stdout and stderr together are kept; a program printing more is
stopped at once (never read without end). The program's whole tree goes with it, to the last
process, whenever it ends: in its cgroup; without one, under a subreaper (core/subreaper.py) that
keeps everything it starts — a daemon that called setsid too — in its tree. So a program is done
when it exits: a child it left behind holding its output open does not keep it running.
"""

from __future__ import annotations

import contextlib
import os
import resource
import signal
import subprocess
import sys
import uuid
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import trio

from benchtui.core import cgroups
from benchtui.core.target import Ran

CHUNK = 1 << 16
MINIMAL_ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LC_ALL": "C.UTF-8", "HOME": "/tmp", "TMPDIR": "/tmp"}
DRAIN_S = 2.0
"""Output still read once the program and its tree are gone (what the pipes hold)."""
SUBREAPER_EXIT_S = 5.0
"""How long the subreaper may take to kill the tree it keeps, once asked (then SIGKILL)."""


def _limits(memory_bytes: int, group: Path) -> Callable[[], None]:
    def child() -> None:  # in the forked child, before exec: async-signal-safe calls only
        resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        with open(group / "cgroup.procs", "w") as procs:
            procs.write(str(os.getpid()))

    return child


def _under_subreaper(argv: Sequence[str], memory_bytes: int) -> list[str]:
    # -P: never the program's folder first on sys.path (it could hold a `benchtui` of its own)
    return [sys.executable, "-P", "-m", "benchtui.core.subreaper", str(memory_bytes), *argv]


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

    async def end_tree() -> None:
        """Kill what is left of the program's tree (shielded: it runs on every way out)."""
        assert process is not None
        with trio.CancelScope(shield=True):
            if group is not None:
                await trio.to_thread.run_sync(cgroups.kill_all, group)
            elif process.returncode is None:  # the subreaper kills its tree, then itself
                with contextlib.suppress(ProcessLookupError):
                    process.send_signal(signal.SIGTERM)
                with trio.move_on_after(SUBREAPER_EXIT_S):
                    await process.wait()
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(process.pid, signal.SIGKILL)
            await process.wait()

    try:
        try:
            process = await trio.lowlevel.open_process(
                list(argv) if group is not None else _under_subreaper(argv, memory_bytes),
                cwd=str(cwd),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
                env=dict(env if env is not None else MINIMAL_ENV),
                # without a group, the subreaper bounds the program it starts (not itself)
                preexec_fn=_limits(memory_bytes, group) if group is not None else None,
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
            with contextlib.suppress(trio.ClosedResourceError):
                while chunk := await stream.receive_some(CHUNK):
                    into.append(bytes(chunk[: max(output_bytes - kept, 0)]))
                    kept += len(chunk)
                    if kept > output_bytes:
                        stopped = stopped or "output"
                        nursery.cancel_scope.cancel()
                        return

        async with trio.open_nursery() as nursery:
            nursery.start_soon(feed)
            nursery.start_soon(drain, process.stdout, out)
            nursery.start_soon(drain, process.stderr, err)
            with trio.move_on_after(timeout_s) as waiting:
                await process.wait()
            if waiting.cancelled_caught:
                stopped = stopped or "timeout"
            await end_tree()  # its output ends with the last process holding it
            nursery.cancel_scope.deadline = trio.current_time() + DRAIN_S
    finally:
        with trio.CancelScope(shield=True):
            if process is not None:
                await end_tree()
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
