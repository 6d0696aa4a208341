"""`python -P -m benchtui.core.subreaper MEMORY_BYTES ARGV...`: run ARGV and keep its whole process
tree under this process, then kill what is left of it.

For bounded runs where no pids cgroup can be made (core/bounded.py; e.g. not root, cgroup v2
without delegation). This process is a child subreaper: whatever ARGV starts and leaves behind — a
daemon that called setsid, a double fork — is reparented here, never to init, so it is always in
this process's /proc tree. When ARGV exits, when asked (SIGTERM), or when the process that started
this one is gone, every descendant left is frozen and killed (core/reaper.py), and this process
exits as ARGV did (its status, or the signal that killed it). ARGV gets the address-space bound;
this process does not (it must outlive what it bounds).
"""

from __future__ import annotations

import os
import resource
import signal
import sys

from benchtui.core import reaper

POLL_S = 0.5
"""How often the parent is looked for while nothing happens (it may die without a word)."""
WATCHED = {signal.SIGCHLD, signal.SIGTERM}


def _start(argv: list[str], memory_bytes: int) -> int:
    pid = os.fork()
    if pid == 0:  # the child: this process is single-threaded, so plain Python is safe here
        try:
            signal.pthread_sigmask(signal.SIG_SETMASK, set())
            resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
            resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
            os.execvp(argv[0], argv)
        except OSError as exc:
            os.write(2, f"cannot start {argv[0]}: {exc.strerror or exc}\n".encode(errors="replace"))
        os._exit(127)
    return pid


def _wait(child: int, parent: int) -> int | None:
    """ARGV's wait status, or None when told to stop (SIGTERM, or the parent is gone)."""
    while True:
        while True:  # reap every child that ended: ARGV, and orphans handed down to us
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return None
            if pid == 0:
                break
            if pid == child:
                return status
        got = signal.sigtimedwait(WATCHED, POLL_S)
        if (got is not None and got.si_signo == signal.SIGTERM) or os.getppid() != parent:
            return None


def _exit_as(status: int | None) -> None:
    code = os.waitstatus_to_exitcode(status) if status is not None else -signal.SIGKILL
    if code < 0:
        if -code != signal.SIGKILL:  # its handler cannot be set (nor need be)
            signal.signal(-code, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_SETMASK, set())
        os.kill(os.getpid(), -code)
        code = 128 - code
    sys.exit(code)


def main(args: list[str]) -> None:
    memory_bytes, argv = int(args[0]), args[1:]
    parent = os.getppid()
    reaper.prctl(reaper.PR_SET_CHILD_SUBREAPER, 1)
    signal.pthread_sigmask(signal.SIG_BLOCK, WATCHED)  # taken by sigtimedwait, never by a handler
    child = _start(argv, memory_bytes)
    status = _wait(child, parent)
    reaper.kill_tree(os.getpid(), include_root=False)
    while True:
        try:
            pid, found = os.waitpid(-1, 0)
        except ChildProcessError:
            break
        if pid == child:
            status = found if status is None else status
    _exit_as(status)


if __name__ == "__main__":
    main(sys.argv[1:])
