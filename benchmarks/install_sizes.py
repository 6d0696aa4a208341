"""What each install weighs: every extra in a fresh venv, `pip install -e '.[EXTRA]'` of this
checkout, timed; then the packages `pip list` counts and the venv's size on disk. Writes the
`[install.*]` tables of docs/figures.toml (with `--write`), which the docs' install table and
their marked figures come from (`python docs/gen_reference.py` then writes the pages).

    python benchmarks/install_sizes.py [--extras base,mini,ray,test,docs] [--write] [--note TEXT]
    python benchmarks/install_sizes.py --here [--extras …] [--write]   # no new venv: the closures here

`--here` (and tests/docs/test_figures.py) counts an extra as a fresh venv would hold it without
making one: its distributions' closure in the running environment plus pip and setuptools, and
their RECORDed files on disk (measured 2026-12-03: the base install 53 packages / 407 MB both
ways).

Each install goes through pip's usual configuration (this machine's package index and cache),
so the times say as much about the network and the cache as about benchtui: `--note` records
which (e.g. "warm pip cache, local package mirror").
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import re
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


def measure(extra: str) -> dict[str, int | str]:
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
        return {
            "measured": time.strftime("%Y-%m-%d"),
            "packages": len(json.loads(listed.stdout)),
            "venv_mb": size_mb(venv),
            "seconds": seconds,
        }


def _name(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def in_this_environment(extra: str) -> dict[str, int] | None:
    """What `benchtui[extra]` weighs in the environment this runs in, counted as a fresh venv
    would hold it: its distributions' closure (requirements followed, markers and extras
    evaluated) plus pip and setuptools, as `pip list` counts them; their files on disk (each
    one's RECORD: what pip wrote, byte-compiled files included). None when part of the closure is
    not installed here (that extra was not installed)."""
    from importlib import metadata

    from packaging.requirements import Requirement

    found: dict[str, set[str]] = {}
    todo: list[tuple[str, frozenset[str]]] = [("benchtui", frozenset({extra} if extra != "base" else ()))]
    todo += [("pip", frozenset()), ("setuptools", frozenset())]
    while todo:
        name, extras = todo.pop()
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            if name in ("pip", "setuptools"):
                continue  # a venv without setuptools (Python 3.12 on): not counted there either
            return None
        key = _name(dist.metadata["Name"])
        if key in found and extras <= found[key]:
            continue
        found.setdefault(key, set()).update(extras)
        for line in dist.requires or []:
            req = Requirement(line)
            if req.marker is None or any(req.marker.evaluate({"extra": e}) for e in (extras or {""})):
                todo.append((req.name, frozenset(req.extras)))
    size = 0
    for key in found:
        dist = metadata.distribution(key)
        for file in dist.files or []:
            path = Path(str(dist.locate_file(file)))
            if path.is_file() and not path.is_symlink():
                size += path.stat().st_size
    return {"packages": len(found), "venv_mb": round(size / 1e6) + EMPTY_VENV_MB}


EMPTY_VENV_MB = 1
"""A venv's own files besides its distributions (bin/, pyvenv.cfg, the interpreter's links)."""


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--extras", default=",".join(EXTRAS))
    p.add_argument("--write", action="store_true", help="write the figures into docs/figures.toml")
    p.add_argument("--note", default="", help="how pip got its packages (cache, mirror), for the record")
    p.add_argument(
        "--here",
        action="store_true",
        help="no new venv: count each extra's closure in this environment (packages and size; "
        "the time is not measured and stays as it was)",
    )
    args = p.parse_args()
    figures = figures_module()
    load = os.getloadavg()[0]
    if args.here:
        for extra in args.extras.split(","):
            here = in_this_environment(extra)
            if here is None:
                print(f"{extra:<5} not installed whole here", flush=True)
                continue
            print(
                f"{extra:<5} {here['packages']:>4} packages {here['venv_mb']:>6} MB (closure here)",
                flush=True,
            )
            if args.write:
                figures.update(
                    figures.FIGURES, f"install.{extra}", {"measured": time.strftime("%Y-%m-%d"), **here}
                )
        return 0
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
