"""How long the shipped first campaigns run, headless: `campaigns/play.toml` (the one to try the
TUI's keys on), `campaigns/fair.toml` and `benchtui demo` (needs the `[mini]` extra), each in a
fresh state dir. Writes the `[durations.*]` tables of docs/figures.toml (with `--write`), which
the docs' marked figures come from (`python docs/gen_reference.py` then writes the pages).

    python benchmarks/durations.py [--only play,fair,demo] [--write]
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RUNS = {
    "play": ["campaigns/play.toml", "--no-ui"],
    "fair": ["campaigns/fair.toml", "--no-ui"],
    "demo": ["demo", "--no-ui"],
}


def figures_module():
    spec = importlib.util.spec_from_file_location("figures", ROOT / "docs" / "figures.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def measure(args: list[str]) -> int:
    with tempfile.TemporaryDirectory(prefix="benchtui-durations-") as tmp:
        started = time.monotonic()
        subprocess.run(
            [sys.executable, "-m", "benchtui", *args, "--state-dir", tmp],
            cwd=ROOT,
            check=True,
            stdout=subprocess.DEVNULL,
        )
        return round(time.monotonic() - started)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--only", default=",".join(RUNS))
    p.add_argument("--write", action="store_true", help="write the figures into docs/figures.toml")
    args = p.parse_args()
    figures = figures_module()
    load = os.getloadavg()[0]
    for name in args.only.split(","):
        seconds = measure(RUNS[name])
        print(f"{name:<5} {seconds:>4} s", flush=True)
        if args.write:
            figures.update(
                figures.FIGURES,
                f"durations.{name}",
                {"measured": time.strftime("%Y-%m-%d"), "seconds": seconds},
            )
    if args.write:
        when = time.strftime("%Y-%m-%d")
        figures.update(
            figures.FIGURES,
            "durations",
            {
                "measured": f"{when}, headless (`--no-ui`), {os.cpu_count()} cores, load average {load:.0f} at the start"
            },
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
