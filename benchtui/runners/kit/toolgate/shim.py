"""The tool shim: first on the agent's PATH, it asks the session's gate before a counted tool runs.

Run inside the sandbox as `python -I -S shim.py GATE_SOCKET TOOL ARGS...` by a two-line wrapper
named like the tool (see `gate.install`). Standard library only, no site packages: it must start
fast and work with nothing but the interpreter. The gate answers one JSON line; when the call is
granted it also passes an open file descriptor of the real tool (SCM_RIGHTS), which the shim
executes in its place: the tool itself need not be visible in the sandbox at all.
"""

import json
import os
import socket
import sys

REFUSED = 126  # "command found but not executable", as a shell says it


def main(argv: list[str]) -> int:
    gate, tool, args = argv[1], argv[2], argv[3:]
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.connect(gate)
            sock.sendall(json.dumps({"argv": [tool, *args]}).encode() + b"\n")
            data, fds, _flags, _addr = socket.recv_fds(sock, 1 << 16, 1)
            while not data.endswith(b"\n"):
                more = sock.recv(1 << 16)
                if not more:
                    break
                data += more
        answer = json.loads(data)
    except (OSError, ValueError) as exc:
        print(f"benchtui: {tool}: the session's tool gate did not answer ({exc}); not run", file=sys.stderr)
        return REFUSED
    if not answer.get("ok") or not fds:
        print(answer.get("message") or f"benchtui: {tool}: refused; not run", file=sys.stderr)
        return REFUSED
    os.set_inheritable(fds[0], True)  # a script tool is run by its interpreter through /dev/fd/N
    os.execve(fds[0], [tool, *args], os.environ)
    return REFUSED  # not reached


if __name__ == "__main__":
    sys.exit(main(sys.argv))
