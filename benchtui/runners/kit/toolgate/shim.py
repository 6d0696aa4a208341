"""The tool shim: first on the agent's PATH, it asks the session's gate to run a counted tool.

Run inside the sandbox as `python -I -S shim.py GATE_SOCKET TOOL ARGS...` by a two-line wrapper
named like the tool (see `gate.install`). Standard library only, no site packages: it must start
fast and work with nothing but the interpreter. It passes its stdin, stdout and stderr to the gate
(SCM_RIGHTS) with the command line and its working directory; the gate runs the tool (the tool
is not in the sandbox at all) and answers one JSON line: what to print, the exit status. For
`submit FILE` it sends the file's text instead (it reads it here, as the agent sees it).
"""

import json
import os
import socket
import sys
from typing import Any

REFUSED = 126  # "command found but not executable", as a shell says it
MAX_FILE = 1_000_001  # one character over the verifier's bound: too large, and said so


def request(tool: str, args: list[str]) -> dict[str, Any]:
    message: dict[str, Any] = {"argv": [tool, *args], "cwd": os.getcwd() if os.path.isdir(".") else "/"}
    if tool == "submit" and len(args) == 1:
        try:
            with open(args[0], encoding="utf-8", errors="replace") as file:
                message["file"] = file.read(MAX_FILE)
        except (OSError, ValueError) as exc:
            message["file_error"] = f"cannot read {args[0]}: {getattr(exc, 'strerror', None) or exc}"
    return message


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def main(argv: list[str]) -> int:
    gate, tool, args = argv[1], argv[2], argv[3:]
    if tool == "submit" and len(args) != 1:
        print("usage: submit FILE (a JSON certificate; one of this session's submits)", file=sys.stderr)
        return 2
    try:
        data = b""
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.connect(gate)
            socket.send_fds(sock, [json.dumps(request(tool, args)).encode() + b"\n"], [0, 1, 2])
            while not data.endswith(b"\n"):
                more = sock.recv(1 << 16)
                if not more:
                    break
                data += more
        answer = json.loads(data)
    except (OSError, ValueError) as exc:
        print(f"benchtui: {tool}: the session's tool gate did not answer ({exc}); not run", file=sys.stderr)
        return REFUSED
    if not isinstance(answer, dict):
        return REFUSED
    sys.stdout.flush()
    write_all(1, str(answer.get("out", "")).encode("latin-1") + str(answer.get("stdout", "")).encode())
    write_all(2, str(answer.get("err", "")).encode("latin-1"))
    if answer.get("stderr"):
        print(answer["stderr"], file=sys.stderr)
    code = answer.get("exit")
    return code if isinstance(code, int) else REFUSED


if __name__ == "__main__":
    sys.exit(main(sys.argv))
