"""Placement `checkout`: the benchmark's checkout on this machine, with what its Docker image
bakes rebuilt for each session (`inside.py` does it in the session's own mount namespace).

The host side, here: the session's stage folder (a private temporary folder naming no model),
holding a copy of the library's `src/` and `Cargo.toml` with the image's `.prb-pinned-commit`
and `.prb-source-manifest` (sha256 of every file under `src/`, as its Dockerfile's
`find src -type f | sort | xargs sha256sum` makes it), the overlays' folders and the plan.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from benchtui.runners.top50 import inside

INSIDE = Path(inside.__file__)
RUNNER = ("-m", "benchmark.run_top50")


@dataclass(frozen=True, slots=True)
class Pins:
    """What the image would bake for the campaign's library checkout and pred."""

    commit: str
    pred_version: str


def make_repo(library: Path, repo: Path, commit: str) -> None:
    """REPO_DIR as the image has it: src/, Cargo.toml, the commit marker and the source manifest."""
    shutil.copytree(library / "src", repo / "src", symlinks=True)
    shutil.copy2(library / "Cargo.toml", repo / "Cargo.toml")
    files = sorted(p.relative_to(repo).as_posix() for p in (repo / "src").rglob("*") if p.is_file())
    lines = [f"{hashlib.sha256((repo / f).read_bytes()).hexdigest()}  {f}\n" for f in files]
    (repo / ".prb-source-manifest").write_text("".join(lines), encoding="utf-8")
    (repo / ".prb-pinned-commit").write_text(commit + "\n", encoding="utf-8")
    for folder, _, names in os.walk(repo):
        os.chmod(folder, 0o755)
        for name in names:
            path = os.path.join(folder, name)
            if not os.path.islink(path):
                os.chmod(path, 0o644)


def prefixes(python: str) -> list[str]:
    """The interpreter's own folders (its agent and oracle users run it for their shims)."""
    if os.path.realpath(python) == os.path.realpath(sys.executable):
        found = [sys.base_prefix, sys.prefix]
    else:
        code = "import sys; print(sys.base_prefix); print(sys.prefix)"
        found = subprocess.run(
            [python, "-c", code], capture_output=True, text=True, check=True
        ).stdout.split()
    return sorted({os.path.realpath(p) for p in found})


def write_plan(
    stage: Path,
    *,
    library: Path,
    benchmark: Path,
    pred: str,
    pins: Pins,
    oracle_gid: int,
    python: str,
    env: dict[str, str],
    out: Path,
) -> tuple[list[str], dict[str, str]]:
    """Make the stage and the plan; the argv to run (as root) and its environment."""
    for name in ("usr-upper", "usr-work", "bench-upper", "bench-work"):
        (stage / name).mkdir(mode=0o755)
    make_repo(library, stage / "repo", pins.commit)
    os.chmod(stage, 0o755)
    inner_env = {
        **env,
        "REPO_DIR": inside.REPO,
        "OUTPUT": f"{inside.OUT}/submission.json",
        "PRED_BINARY": inside.PRED,
        "PYTHONPATH": str(benchmark),
    }
    plan = {
        "usr_upper": str(stage / "usr-upper"),
        "usr_work": str(stage / "usr-work"),
        "bench_upper": str(stage / "bench-upper"),
        "bench_work": str(stage / "bench-work"),
        "repo": str(stage / "repo"),
        "out": str(out),
        "pred": pred,
        "oracle_gid": oracle_gid,
        "benchmark": str(benchmark),
        "commit": pins.commit,
        "pred_version": pins.pred_version,
        "reachable": [*prefixes(python), str(benchmark)],
        "cwd": str(benchmark),
        "argv": [python, *RUNNER],
        "env": inner_env,
    }
    plan_file = stage / "plan.json"
    plan_file.write_text(json.dumps(plan), encoding="utf-8")
    os.chmod(plan_file, 0o600)
    argv = ["unshare", "--mount", "--propagation", "private", python, str(INSIDE), str(plan_file)]
    return argv, {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8"}


def library_commit(library: Path) -> str:
    """The library checkout's commit (`git rev-parse HEAD`); ValueError when it is not a checkout."""
    try:
        done = subprocess.run(
            ["git", "-C", str(library), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=30
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ValueError(f"git rev-parse in {library}: {exc}") from None
    if done.returncode != 0:
        raise ValueError(f"{library} is not a git checkout: {done.stderr.strip()[:200]}")
    return done.stdout.strip()


def pred_version(pred: str) -> str:
    """What `pred --version` says, as the Dockerfile reads it (the first x.y.z)."""
    import re

    done = subprocess.run([pred, "--version"], capture_output=True, text=True, timeout=60)
    found = re.search(r"[0-9]+\.[0-9]+\.[0-9]+", done.stdout)
    if done.returncode != 0 or not found:
        raise ValueError(f"{pred} --version said {done.stdout.strip()[:100]!r} (exit {done.returncode})")
    return found.group(0)
