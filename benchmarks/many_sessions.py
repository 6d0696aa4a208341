"""Many sandboxed sessions at once, and the cost of watching each command under the session's limits.

Offline: a scripted OpenAI-compatible server on 127.0.0.1 answers each call after 1 s; every
session runs three `sleep 0.5` commands in bubblewrap, then submits (issue 15, item 9: the first
16 of 128 used to end "worker ended without a report"). Then, per command, `limits.Watched` (head
and tail kept, processes and disk watched) against plain `subprocess.run`, on `true` and on 50 MB
of output.

    python benchmarks/many_sessions.py [SESSIONS]      # default 256, all at once
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import trio

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from support.mini import STAND_IN_PRED, journal, run_campaign, write_campaign  # noqa: E402
from support.scripted_llm import SUBMIT, Reply, ScriptedLLM  # noqa: E402


async def sessions_at_once(tmp: Path, n: int) -> None:
    steps = [Reply("sleep 0.5", 100, 10, delay_s=1.0)] * 3 + [Reply(SUBMIT, 100, 10, delay_s=1.0)]
    with ScriptedLLM(steps) as llm:
        path = write_campaign(
            tmp,
            llm.url,
            models=("openai/scripted-a", "openai/scripted-b"),
            sessions_per_model=n // 2,
            parallelism=n,
            budget={"total_usd": n * 0.05},
            runner={"environment": "bubblewrap"},
        )
        started = time.perf_counter()
        prep, _ = await run_campaign(path, tmp / "runs")
        wall = time.perf_counter() - started
    records = list(journal(prep.run_dir).values())
    ok = sum(r["state"] == "done" and r["calls"] == len(steps) for r in records)
    print(f"{n} bubblewrap sessions at once: {ok}/{len(records)} finished with every call, wall {wall:.1f} s")


def per_command(tmp: Path) -> None:
    from benchtui.runners.mini.forkserver import SETTINGS

    # What the zygote sets before importing mini-swe-agent (else it prints and reads ~/.config).
    os.environ.update({**SETTINGS, "MSWEA_GLOBAL_CONFIG_DIR": str(tmp)})
    from benchtui.runners.mini.resources import Limits, Watched

    limits = Limits(256, 1024, 2 << 20, 32 << 20, 10_000)
    watched = Watched(limits, [tmp], None)
    for label, command in (("true", "true"), ("50 MB of output", "head -c 50000000 /dev/zero")):
        plain, bounded = [], []
        for _ in range(10):
            t = time.perf_counter()
            subprocess.run(command, shell=True, capture_output=True)
            plain.append(time.perf_counter() - t)
            t = time.perf_counter()
            watched.run(command, cwd=str(tmp), env=dict(os.environ), timeout=60)
            bounded.append(time.perf_counter() - t)
        print(
            f"{label:16} subprocess.run median {1000 * statistics.median(plain):6.1f} ms, "
            f"Watched.run median {1000 * statistics.median(bounded):6.1f} ms"
        )


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 256
    with tempfile.TemporaryDirectory() as tmp:
        bin_dir = Path(tmp, "bin")
        bin_dir.mkdir()
        (bin_dir / "pred").symlink_to(STAND_IN_PRED)
        os.environ["PATH"] = f"{bin_dir}{os.pathsep}{os.environ['PATH']}"
        os.environ.setdefault("SCRIPTED_API_KEY", "sk-bench-0000000000")
        trio.run(sessions_at_once, Path(tmp, "campaign"), n)
        per_command(Path(tmp, "bin"))


if __name__ == "__main__":
    main()
