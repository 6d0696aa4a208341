"""What each install weighs: every extra in a fresh venv, `pip install -e '.[EXTRA]'` of this
checkout, timed; then the packages `pip list` counts and the venv's size on disk. Writes the
`[install.*]` tables of docs/figures.toml (with `--write`), which the docs' install table and
their marked figures come from (`python docs/gen_reference.py` then writes the pages).

    python benchmarks/install_sizes.py [--extras base,mini,ray,test,docs] [--write] [--note TEXT]

Each install goes through pip's usual configuration (this machine's package index and cache),
so the times say as much about the network and the cache as about benchtui: `--note` records
which (e.g. "warm pip cache, local package mirror").
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXTRAS = ("base", "mini", "ray", "test", "docs")


def figures_module():
    spec = importlib.util.spec_from_file_location("figures", ROOT / "docs" / "figures.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def size_mb(folder: Path) -> int:
    total = 0
    for dirpath, _, names in os.walk(folder):
        for name in names:
            path = Path(dirpath, name)
            if not path.is_symlink():
                total += path.stat().st_size
    return round(total / 1e6)


def measure(extra: str) -> dict[str, int]:
    with tempfile.TemporaryDirectory(prefix="benchtui-install-") as tmp:
        venv = Path(tmp) / "venv"
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        python = venv / "bin" / "python"
        spec = f"{ROOT}[{extra}]" if extra != "base" else str(ROOT)
        started = time.monotonic()
        subprocess.run([python, "-m", "pip", "install", "-q", "-e", spec], check=True)
        seconds = round(time.monotonic() - started)
        listed = subprocess.run(
            [python, "-m", "pip", "list", "--format", "json"], check=True, capture_output=True, text=True
        )
        return {"packages": len(json.loads(listed.stdout)), "venv_mb": size_mb(venv), "seconds": seconds}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--extras", default=",".join(EXTRAS))
    p.add_argument("--write", action="store_true", help="write the figures into docs/figures.toml")
    p.add_argument("--note", default="", help="how pip got its packages (cache, mirror), for the record")
    args = p.parse_args()
    figures = figures_module()
    load = os.getloadavg()[0]
    for extra in args.extras.split(","):
        found = measure(extra)
        print(
            f"{extra:<5} {found['packages']:>4} packages {found['venv_mb']:>6} MB {found['seconds']:>5} s",
            flush=True,
        )
        if args.write:
            figures.update(figures.FIGURES, f"install.{extra}", found)
    if args.write:
        when = time.strftime("%Y-%m-%d")
        version = ".".join(map(str, sys.version_info[:2]))
        note = f", {args.note}" if args.note else ""
        figures.update(
            figures.FIGURES,
            "install",
            {
                "measured": f"{when}, Python {version}{note}, {os.cpu_count()} cores, load average {load:.0f} at the start"
            },
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
