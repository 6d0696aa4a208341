"""Helpers for the top50 runner's tests: a library checkout with 55 rules, a copy of the
benchmark-runner stand-in (support/top50_standin: the contract, written here) told what to do,
a certificate the stand-in pred confirms, and a campaign around them."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import tomli_w

from support.mini import PRICES, RULE

STANDIN = Path(__file__).resolve().parent / "top50_standin"
RULES = [f"rule_{i:02d}" for i in range(55)]


def namespace_problem() -> str | None:
    """Why this machine cannot run placement `checkout` (root, unshare, an overlay), or None."""
    import os

    if os.geteuid() != 0:
        return "placement checkout needs root (it setuids to the benchmark's agent and oracle)"
    if shutil.which("unshare") is None:
        return "placement checkout needs unshare (util-linux)"
    probe = "mount -t tmpfs tmpfs /mnt 2>&1 && echo ok"
    done = subprocess.run(
        ["unshare", "-m", "--propagation", "private", "sh", "-c", probe], capture_output=True, text=True
    )
    if "ok" not in done.stdout:
        return f"no private mount namespace here: {(done.stdout + done.stderr).strip()[:200]}"
    return None


def require_namespace() -> None:
    why = namespace_problem()
    if why:
        pytest.skip(why)


def make_library(root: Path) -> Path:
    """A git checkout shaped like problem-reductions: src/rules/*.rs and Cargo.toml."""
    lib = root / "library"
    (lib / "src" / "rules").mkdir(parents=True)
    for name in RULES:
        (lib / "src" / "rules" / f"{name}.rs").write_text(f"// {name}\n")
    (lib / "src" / "lib.rs").write_text("pub mod rules;\n")
    (lib / "Cargo.toml").write_text('[package]\nname = "problemreductions"\n')
    (lib / "README.md").write_text("library (test stand-in)\n")
    git = ["git", "-C", str(lib), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "library"], check=True)
    return lib


def make_benchmark(root: Path, **config: Any) -> Path:
    """A copy of the stand-in checkout, told what to do (`standin.json`)."""
    bench = root / "benchmark-checkout"
    if not bench.exists():
        shutil.copytree(STANDIN, bench)
    configure(bench, **config)
    return bench


def configure(bench: Path, **config: Any) -> None:
    (bench / "standin.json").write_text(json.dumps({"calls": 1, **config}))


def confirmed_certificate(pred: Path, workdir: Path) -> dict[str, Any]:
    """The stand-in pred's planted bug (MIS -> MVC), as a certificate its verifier confirms."""
    workdir.mkdir(exist_ok=True)
    run = {"cwd": workdir, "check": True, "capture_output": True}
    subprocess.run([str(pred), "create", "MIS", "--graph", "0-1,1-2", "-o", "source.json"], **run)  # type: ignore[call-overload]
    bundle = subprocess.run(
        [str(pred), "reduce", "source.json", "--to", "MinimumVertexCover", "--json"], **run
    )  # type: ignore[call-overload]
    return {
        "rule": RULE,
        "violation": "suboptimal_extraction",
        "source": json.loads((workdir / "source.json").read_text()),
        "bundle": json.loads(bundle.stdout),
        "target_config": "0,1,0",
    }


def write_campaign(
    tmp_path: Path,
    api_base: str,
    bench: Path,
    library: Path,
    *,
    models: tuple[str, ...] = ("openai/scripted-a",),
    sessions: int = 1,
    budget: dict[str, Any] | None = None,
    runner: dict[str, Any] | None = None,
    parallelism: int = 2,
) -> Path:
    doc = {
        "name": "top50",
        "parallelism": parallelism,
        "runner": "top50",
        "sessions_per_model": sessions,
        "budget": budget or {"total_usd": 10.0},
        "runners": {
            "top50": {
                "kind": "top50",
                "placement": "checkout",
                "benchmark": str(bench),
                "wall_time_s": 120,
                "verify_timeout_s": 20,
                **(runner or {}),
            }
        },
        "models": [
            {
                "name": name,
                **PRICES,
                "max_output_tokens": 8192,
                "api_base": api_base,
                "api_key_env": "SCRIPTED_API_KEY",
            }
            for name in models
        ],
        "environment": {"path": str(library), "tools": ["pred"]},
    }
    path = tmp_path / "campaign.toml"
    path.write_text(tomli_w.dumps(doc))
    return path


def runner_pids(bench: Path) -> list[int]:
    """Live processes of a benchmark runner in `bench` (its cwd: the runner's command line,
    `python -m benchmark.run_top50`, names no checkout)."""
    import os

    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            cwd = os.readlink(f"/proc/{entry}/cwd")
            with open(f"/proc/{entry}/stat") as f:
                zombie = f.read().rsplit(")", 1)[1].split()[0] == "Z"
        except OSError:
            continue
        if not zombie and (cwd == str(bench) or cwd.startswith(f"{bench}/")):
            found.append(int(entry))
    return found
