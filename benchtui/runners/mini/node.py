"""The node's side of a remote mini-swe-agent session: a worker process whose channel is a TCP
connection back to the engine instead of a socketpair from the zygote.

The task connects to the engine's channel listener and names its session with a one-time token;
the engine answers with the session's request (secrets included: they never travel as a Ray
task argument, which Ray may store), then the worker speaks the usual protocol on that socket.
The worker watches it (`worker._watch_engine`): when the engine closes it (kill, wall time, end)
or dies, the worker kills its process tree at once. No zygote on the node: each worker pays its
own imports (see the README's figures).
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

from benchtui.core import tempdirs, volume
from benchtui.core.target import Toolbox
from benchtui.runners.kit.collect import MAX_FILE_BYTES
from benchtui.runners.kit.ray.node import _read, start_janitor, where
from benchtui.runners.kit.toolgate.node import NodeGate, NodeGateSpec
from benchtui.runners.mini.forkserver import PROJECT_ROOT, SETTINGS

CONNECT_TIMEOUT_S = 30.0


def run_worker(engine: tuple[str, int], token: str) -> dict[str, object]:
    """Run one session's worker to its end; returns where it ran and the files it wrote."""
    here = where()
    folder = tempdirs.make("mini")
    lifeline, held = os.pipe()
    gate: NodeGate | None = None
    try:
        with socket.create_connection(engine, timeout=CONNECT_TIMEOUT_S) as sock:
            sock.sendall(token.encode() + b"\n")
            request = json.loads(sock.makefile("rb").readline())
            sock.settimeout(None)
            names = {"trajectory": "traj.json", "log": "worker.log"}
            paths = request["paths"]
            paths.update(workdir=str(folder / "workdir"), session_dir=str(folder))
            paths.update({key: str(folder / name) for key, name in names.items()})
            # Processes counted in /proc, not in a pids cgroup: a cgroup would outlive a worker
            # whose task was force-cancelled (the engine removes local ones; it cannot reach these).
            request["env"]["BENCHTUI_PIDS_CGROUP"] = "0"
            found = request.pop("node_gate", None)
            if found is not None:  # counted tools, submits: the session's gate, here, asking the engine's
                spec = NodeGateSpec(
                    **{
                        **found,
                        "address": tuple(found["address"]),
                        "tools": tuple(found["tools"]),
                        "toolbox": Toolbox.from_json(found["toolbox"]) if found.get("toolbox") else None,
                    }
                )
                gate = NodeGate(spec, folder, folder / "workdir")
                paths["gate"] = gate.open()
            (folder / "request.json").write_text(json.dumps(request))
            env = {
                **SETTINGS,
                "MSWEA_GLOBAL_CONFIG_DIR": str(folder / "mswea"),
                "PYTHONPATH": PROJECT_ROOT,
                "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            }
            with (folder / "start.log").open("wb") as log:
                worker = subprocess.Popen(
                    [sys.executable, "-m", "benchtui.runners.mini.node", str(folder / "request.json"), str(sock.fileno())],
                    pass_fds=(sock.fileno(),), env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                )  # fmt: skip
            # If this task's worker process is killed (force-cancel, its node's raylet dying), no
            # `finally` runs here: the janitor sees the lifeline end, kills the worker's session
            # (it calls setsid) and removes the folder (the session's copy of the target).
            start_janitor(lifeline, worker.pid, folder)
            os.close(lifeline)  # the janitor's now
            lifeline = -1
        code = worker.wait()
        files = {
            name: _read(folder / name, MAX_FILE_BYTES) for name in names.values() if (folder / name).is_file()
        }
        return {"node": here, "exit": code, "files": files}
    finally:
        if gate is not None:
            gate.close()
        os.close(held)
        if lifeline >= 0:
            os.close(lifeline)
        volume.remove(folder / "workdir")  # the worker's copy, a volume when the engine asked for one
        shutil.rmtree(folder, ignore_errors=True)


def main(argv: list[str]) -> int:
    from benchtui.runners.mini import worker  # the slow imports (litellm), in this process only

    request = json.loads(Path(argv[0]).read_text())
    os.unlink(argv[0])  # it holds the secrets
    worker.warm_up()
    return worker.main(request, socket.socket(fileno=int(argv[1])))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
