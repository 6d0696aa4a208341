"""The zygote: a process that imports litellm and mini-swe-agent once, then forks a worker per session.

`import litellm` alone takes seconds; a fork of a process that has done it takes milliseconds.
Run as `python -m benchtui.runners.mini.zygote CONTROL_FD ENGINE_PID` by `forkserver.spawn`.
Each request on the control socket (SOCK_SEQPACKET) is one JSON session request carrying, as
SCM_RIGHTS, the worker's end of that session's private socketpair. The zygote stays
single-threaded (safe to fork), ignores SIGCHLD (the kernel reaps its workers) and dies with the
engine (PR_SET_PDEATHSIG) or when the engine closes the control socket.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import sys
import threading

MAX_REQUEST = 4 * 1024 * 1024
REQUIRED = ("MSWEA_SILENT_STARTUP", "MSWEA_GLOBAL_CONFIG_DIR", "LITELLM_LOCAL_MODEL_COST_MAP")


def serve(control: socket.socket) -> None:
    from benchtui.runners.mini import worker  # the slow imports, once

    worker.warm_up()
    if threading.active_count() > 1:  # a fork would lose those threads (and any lock they hold)
        print(f"zygote: warning: threads after warm-up: {threading.enumerate()}", file=sys.stderr)
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)
    control.send(b"ready")
    while True:
        try:
            data, fds, _flags, _addr = socket.recv_fds(control, MAX_REQUEST, 1)
        except OSError:
            return
        if not data:
            return
        if not fds:
            continue
        if os.fork() == 0:
            code = 70
            try:
                control.close()
                code = worker.main(json.loads(data), socket.socket(fileno=fds[0]))
            finally:
                os._exit(code)
        for fd in fds:
            os.close(fd)


def main(argv: list[str]) -> None:
    control = socket.socket(fileno=int(argv[0]))
    engine = int(argv[1])
    from benchtui.runners.kit import reaper

    reaper.prctl(reaper.PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != engine:  # the engine died before we asked to die with it
        sys.exit(0)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    missing = [key for key in REQUIRED if key not in os.environ]
    if missing:  # importing litellm / mini-swe-agent without them has side effects
        sys.exit(f"zygote: missing environment {', '.join(missing)} (see forkserver.SETTINGS)")
    serve(control)


if __name__ == "__main__":
    main(sys.argv[1:])
