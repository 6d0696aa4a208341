"""Run as root by `unshare --mount --propagation private`, in the session's own mount namespace:
rebuild what the benchmark's Docker image bakes, then exec its runner. Standard library only (run
by path with the benchmark's interpreter; it imports nothing of benchtui).

One argument: a JSON file (the session's plan, `checkout.Plan.to_json`) saying
- `usr_upper`, `usr_work`: an overlay on /usr/local (the host's is never written), inside which
  `pred` is installed at /usr/local/libexec/prb/pred (root:oracle gid, 0750: a copy, as the image
  has it; the runner resolves the path, so a link would not pass), the library's source (`repo`)
  is bound at REPO_DIR and the run's output folder (`out`) at OUTPUT's folder;
- `bench_upper`, `bench_work`: an overlay on the checkout's `benchmark/` folder holding its
  PINNED_COMMIT and PINNED_VERSION (git-ignored files the image bakes);
- `reachable`: folders the agent and oracle users must reach (the interpreter's): an ancestor
  they cannot enter (/root, 0700) is covered by an empty 0755 tmpfs with only those bound back;
- with a second argument (a pipe's read end, the engine holding its write end), the runner is
  forked and watched: when the engine dies, even by SIGKILL, the pipe's end is read and the
  run's whole tree is killed;
- then a private /tmp (the runner's hard-coded /tmp/prb-* scratch folders die with it; a
  `reachable` folder under the host's /tmp is bound back at its path), and
  `argv` is exec'd in `cwd` with `env`.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import threading

PRED = "/usr/local/libexec/prb/pred"
REPO = "/usr/local/share/prb/pr-src"
OUT = "/usr/local/share/prb/out"
KEEP = "/usr/local/share/prb/keep"
"""Where folders are held while what hides them is mounted (root only)."""


def mount(*args: str) -> None:
    subprocess.run(["mount", *args], check=True, stdout=subprocess.DEVNULL)


def overlay(lower: str, upper: str, work: str) -> None:
    mount("-t", "overlay", "overlay", "-o", f"lowerdir={lower},upperdir={upper},workdir={work}", lower)


def bind(source: str, target: str) -> None:
    os.makedirs(target, exist_ok=True)
    mount("--rbind", source, target)


def blocked_ancestor(path: str) -> str | None:
    """The first folder on the way to `path` that other users cannot enter (None: all can)."""
    here = "/"
    for part in path.strip("/").split("/"):
        here = os.path.join(here, part)
        if not os.stat(here).st_mode & stat.S_IXOTH:
            return here
    return None


def make_reachable(folders: list[str], keep: str) -> None:
    covered: dict[str, list[str]] = {}
    for folder in folders:
        top = blocked_ancestor(folder)
        if top is not None:
            covered.setdefault(top, []).append(folder)
    for i, (top, inside) in enumerate(sorted(covered.items())):
        kept = []
        for j, folder in enumerate(inside):
            spot = os.path.join(keep, f"{i}-{j}")
            bind(folder, spot)  # held before the cover hides it
            kept.append((spot, folder))
        mount("-t", "tmpfs", "-o", "mode=0755", "tmpfs", top)
        for spot, folder in kept:
            bind(spot, folder)


def private_tmp(folders: list[str], keep: str) -> None:
    """A fresh /tmp; the folders under the host's /tmp the run needs (a checkout a test made
    there) are bound back at their paths."""
    under = [f for f in folders if f.startswith("/tmp/")]
    for i, folder in enumerate(under):
        bind(folder, f"{keep}-{i}")
    mount("-t", "tmpfs", "-o", "mode=1777", "tmpfs", "/tmp")
    for i, folder in enumerate(under):
        bind(f"{keep}-{i}", folder)


def main(plan_file: str, lifeline: int | None) -> None:
    with open(plan_file, encoding="utf-8") as f:
        plan = json.load(f)
    overlay("/usr/local", plan["usr_upper"], plan["usr_work"])
    os.makedirs(os.path.dirname(PRED), exist_ok=True)
    os.chown(os.path.dirname(PRED), 0, plan["oracle_gid"])
    os.chmod(os.path.dirname(PRED), 0o750)
    shutil.copyfile(plan["pred"], PRED)
    os.chown(PRED, 0, plan["oracle_gid"])
    os.chmod(PRED, 0o750)
    bind(plan["repo"], REPO)
    bind(plan["out"], OUT)
    bench = os.path.join(plan["benchmark"], "benchmark")
    overlay(bench, plan["bench_upper"], plan["bench_work"])
    for name, value in (("PINNED_COMMIT", plan["commit"]), ("PINNED_VERSION", plan["pred_version"])):
        with open(os.path.join(bench, name), "w", encoding="utf-8") as f:
            f.write(value + "\n")
    os.makedirs(KEEP, mode=0o700, exist_ok=True)
    make_reachable(plan["reachable"], KEEP)
    private_tmp(plan["reachable"], os.path.join(KEEP, "tmp"))
    os.chdir(plan["cwd"])
    argv = plan["argv"]
    if lifeline is None:
        os.execve(argv[0], argv, plan["env"])
    child = os.fork()
    if child == 0:
        os.close(lifeline)
        os.execve(argv[0], argv, plan["env"])
    threading.Thread(target=watch, args=(lifeline,), daemon=True).start()
    _, status = os.waitpid(child, 0)
    code = os.waitstatus_to_exitcode(status)
    os._exit(code if code >= 0 else 128 - code)


def watch(lifeline: int) -> None:
    """The engine is gone once its end of the lifeline is closed: the run's whole tree goes."""
    while os.read(lifeline, 1):
        pass
    for _ in range(3):  # what forked meanwhile is caught by the next round
        for pid in descendants(os.getpid()):
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
    os._exit(137)


def descendants(root: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat", encoding="utf-8") as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
            children.setdefault(ppid, []).append(int(entry))
    found, todo = [], [root]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


if __name__ == "__main__":
    try:
        main(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else None)
    except (OSError, subprocess.CalledProcessError, KeyError, ValueError) as exc:
        print(f"benchtui top50: the session's namespace could not be made: {exc}", file=sys.stderr)
        sys.exit(70)
