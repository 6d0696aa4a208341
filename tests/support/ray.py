"""A real two-node Ray cluster on this machine (a head, and `node_b` started as a separate
`ray start --address` process), a scripted agent CLI, and campaigns that run it on the cluster.

The cluster is this helper's own: its temp dir, its process groups, its HOME and its Ray
authentication mode. `stop()` kills exactly the processes it started and their descendants (Ray's
workers are the raylets' children), never another Ray on the machine (`ray stop` would stop them
all).

Nothing of the user's Ray set-up reaches it. A stray local `ray.init()` leaves `~/.ray/auth_token`;
`ray start --head` (Ray >= 2.52, `RAY_AUTH_MODE` unset) that finds a token there, or in
`RAY_AUTH_TOKEN`/`RAY_AUTH_TOKEN_PATH`, turns token authentication on for the head alone, while
`ray start --address` and drivers connecting by address do not: node_b then failed to start with
InvalidAuthToken, and with it every two-node test. Here the mode is pinned (`RAY_AUTH_MODE =
disabled`), the token variables are dropped, and HOME is a folder of the cluster's own (nothing read
from or written to the user's ~/.ray).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import tomli_w

from support.mini import PRICES, RULE, make_target

RAY = Path(sys.executable).with_name("ray")
# The GCS declares a silent node dead after ~2 s (default: ~30 s), so node-death tests are quick.
FAST_HEALTH = {
    "RAY_health_check_period_ms": "500",
    "RAY_health_check_timeout_ms": "500",
    "RAY_health_check_failure_threshold": "4",
    "RAY_health_check_initial_delay_ms": "0",
}
#: The user's settings that would change how the cluster authenticates or which cluster it joins.
NOT_INHERITED = ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH", "RAY_ADDRESS")
OWN_SETTINGS = {"RAY_USAGE_STATS_ENABLED": "0", "RAY_AUTH_MODE": "disabled"}
AGENT = '''#!/usr/bin/python3
"""A scripted agent CLI: asks its model (OpenAI Chat Completions, at $OPENAI_BASE_URL), runs
what an answer starting with `RUN: ` says, sends the output back; prints every answer."""
import json, os, subprocess, sys, urllib.error, urllib.request

def call(messages):
    request = urllib.request.Request(
        os.environ["OPENAI_BASE_URL"] + "/chat/completions",
        data=json.dumps({{"model": sys.argv[1], "messages": messages}}).encode(),
        headers={{"authorization": "Bearer " + os.environ["OPENAI_API_KEY"], "content-type": "application/json"}},
    )
    try:
        with urllib.request.urlopen(request, timeout=120) as answer:
            return json.load(answer)["choices"][0]["message"]["content"] or ""
    except urllib.error.HTTPError as exc:
        print("refused:", exc.code, exc.read().decode()[:300], flush=True)
        return None

messages = [{{"role": "user", "content": open(sys.argv[2]).read()}}]
while (text := call(messages)) is not None:
    print(text, flush=True)
    if not text.startswith("RUN: "):
        break
    out = subprocess.run(["bash", "-c", text[5:]], capture_output=True, text=True).stdout
    messages += [{{"role": "assistant", "content": text}}, {{"role": "user", "content": out}}]
'''


def free_port() -> int:
    with socket.socket() as s:  # ephemeral ports lie above Ray's worker ports (10002-19999)
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class LocalCluster:
    def __init__(self, environ: Mapping[str, str] | None = None) -> None:
        """`environ`: the user's environment the cluster is started from (default: this process's)."""
        self.root = Path(tempfile.mkdtemp(prefix="rt", dir="/tmp"))  # short: Ray's socket paths
        self.home = self.root / "home"
        self.home.mkdir()
        self.port = free_port()
        self.address = f"127.0.0.1:{self.port}"
        self.groups: dict[str, int] = {}
        inherited = {
            k: v for k, v in (os.environ if environ is None else environ).items() if k not in NOT_INHERITED
        }
        self.env = {**inherited, **FAST_HEALTH, **OWN_SETTINGS, "HOME": str(self.home)}

    def _start(self, name: str, *args: str) -> None:
        started = subprocess.Popen(
            [str(RAY), "start", *args, "--num-cpus", "2", "--resources", f'{{"{name}": 100}}',
             "--disable-usage-stats", "--node-ip-address", "127.0.0.1", "--temp-dir", str(self.root)],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=self.env, start_new_session=True,
        )  # fmt: skip
        self.groups[name] = started.pid  # its daemons stay in its process group after it exits
        out, _ = started.communicate(timeout=180)
        if started.returncode != 0:
            raise RuntimeError(f"ray start ({name}) failed:\n{out[-3000:]}")

    def start(self) -> LocalCluster:
        self._start("head", "--head", "--port", str(self.port), "--include-dashboard", "false")
        self.start_node_b()
        return self

    def start_node_b(self) -> None:
        self._start("node_b", "--address", self.address)

    def pids(
        self, name: str | None = None, table: dict[int, tuple[int, int, str]] | None = None
    ) -> list[int]:
        """Every live process of the cluster (or of one node), descendants included."""
        groups = {pgid for n, pgid in self.groups.items() if name in (None, n)}
        table = _processes() if table is None else table
        found = {pid for pid, (_, pgid, _) in table.items() if pgid in groups}
        while True:
            more = {pid for pid, (ppid, _, _) in table.items() if ppid in found} - found
            if not more:
                return sorted(found)
            found |= more

    def raylet(self, name: str) -> int:
        table = _processes()  # one snapshot: processes come and go (Ray's workers)
        (pid,) = [p for p in self.pids(name, table) if "raylet/raylet" in table[p][2]]
        return pid

    def kill_raylet(self, name: str) -> None:
        os.kill(self.raylet(name), signal.SIGKILL)

    def kill(self, name: str | None = None) -> None:
        for _ in range(3):
            pids = self.pids(name)
            for pid in pids:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
            if not pids:
                return
            time.sleep(0.2)

    def stop(self) -> None:
        self.kill()
        shutil.rmtree(self.root, ignore_errors=True)


def node_folders() -> set[Path]:
    """The sessions' private folders on the nodes (all nodes here share this machine's /tmp)."""
    tmp = Path(tempfile.gettempdir())
    return {*tmp.glob("benchtui-node-*"), *tmp.glob("benchtui-mini-*")}


def left_behind(before: set[Path], wait_s: float = 5.0) -> set[Path]:
    """Folders made since `before` that are still there after `wait_s` (the janitors' job)."""
    deadline = time.monotonic() + wait_s
    while (new := node_folders() - before) and time.monotonic() < deadline:
        time.sleep(0.05)
    return new


def _processes() -> dict[int, tuple[int, int, str]]:
    """pid -> (parent pid, process group, command line) of every process."""
    table = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            stat = Path(entry.path, "stat").read_text()
            cmdline = Path(entry.path, "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if fields[0] != "Z":
            table[int(entry.name)] = (int(fields[1]), int(fields[2]), cmdline)
    return table


def make_agent(root: Path) -> Path:
    """The scripted agent as an executable in its own folder (the sandbox binds that folder)."""
    path = root / "agent" / "bin" / "scripted-agent"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(AGENT.format())
    path.chmod(0o755)
    return path


def write_campaign(
    tmp_path: Path,
    api_base: str,
    *,
    executor: dict[str, Any] | None,
    name: str = "ray",
    repeats: int = 1,
    models: tuple[str, ...] = ("openai/scripted-a", "openai/scripted-b"),
    budget: dict[str, Any] | None = None,
    parallelism: int = 4,
    environment: str = "bubblewrap",
) -> Path:
    target = tmp_path / "target" if (tmp_path / "target").exists() else make_target(tmp_path)
    agent = make_agent(tmp_path)
    doc = {
        "name": name,
        "tasks": [RULE],
        "repeats": repeats,
        "parallelism": parallelism,
        "runner": "scripted",
        "budget": budget or {"total_usd": 1.0},
        "runners": {
            "scripted": {
                "kind": "command",
                "command": [str(agent), "{model}", "{prompt_file}"],
                "environment": environment,
                **({"unsandboxed": True} if environment == "local" else {}),
                "verify_timeout_s": 30,
            }
        },
        "models": [
            {
                "name": m,
                **PRICES,
                "max_output_tokens": 1000,
                "api_base": api_base,
                "api_key_env": "SCRIPTED_API_KEY",
            }
            for m in models
        ],
        "environment": {"path": str(target), "tools": ["pred"]},
        **({"executor": executor} if executor else {}),
    }
    path = tmp_path / f"{name}.toml"
    path.write_text(tomli_w.dumps(doc))
    return path
