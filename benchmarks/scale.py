"""Scale benchmark: zero-latency FakeRunner campaigns of 1k / 10k / 100k sessions over 10 models.

Prints, per size: wall time and sessions/s of the engine, per-session cost, peak memory, ledger
size and average commit (journal + ledger) write time, and the time a `--resume` takes to load
the finished run. Each size runs in its own process so peak memory is its own.

    python benchmarks/scale.py               # 1000 10000 100000
    python benchmarks/scale.py 1000 10000    # chosen sizes
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

MODELS = 10
PARALLELISM = 64


def campaign(dirpath: Path, sessions: int) -> Path:
    (dirpath / "target").mkdir(exist_ok=True)
    models = "".join(
        f'\n[[models]]\nname = "bench/m{i}"\ninput_usd_per_mtok = 1.0\noutput_usd_per_mtok = 2.0\n'
        for i in range(MODELS)
    )
    path = dirpath / "scale.toml"
    path.write_text(f"""name = "scale"
sessions_per_model = {sessions // MODELS}
parallelism = {PARALLELISM}
runner = "fake"
[budget]
total_usd = 1000000
[runners.fake]
kind = "fake"
cost_usd = 0.001
{models}
[environment]
path = "target"
""")
    return path


def run_one(path: Path, state_dir: Path) -> dict:
    import trio

    from benchtui.cli.main import tune_gc
    from benchtui.engine import events as ev
    from benchtui.engine import run as engine

    tune_gc()  # as the CLI does
    prep = engine.prepare(engine.Options(path, state_dir, fresh=True))
    stats = {}

    async def main():
        async with engine.open_run(prep, ev.EventBus()) as run:
            stats["store"] = run.store
            await run.until_done()

    start = time.perf_counter()
    trio.run(main)
    wall = time.perf_counter() - start
    store = stats["store"]
    run_dir = prep.run_dir
    return {
        "wall_s": wall,
        "sessions": len(prep.plan),
        "commits": store.commits,
        "write_ms_avg": 1000 * store.write_seconds / max(store.commits, 1),
        "ledger_bytes": (run_dir / "ledger.toml").stat().st_size,
        "journal_bytes": (run_dir / "sessions.jsonl").stat().st_size,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def resume_load(path: Path, state_dir: Path) -> dict:
    start = time.perf_counter()
    from benchtui.cli.main import tune_gc
    from benchtui.engine import run as engine

    tune_gc()
    imported = time.perf_counter()
    with engine.prepare(engine.Options(path, state_dir, resume=True)) as prep:
        done = time.perf_counter()
    return {
        "resume_import_s": imported - start,
        "resume_prepare_s": done - imported,
        "pending": len(prep.checkpoint.pending(prep.plan)),
    }


def child(mode: str, path: str, state_dir: str) -> None:
    fn = run_one if mode == "run" else resume_load
    print(json.dumps(fn(Path(path), Path(state_dir))))


def measure(sessions: int) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        path = campaign(tmp, sessions)
        out = {}
        for mode in ("run", "resume"):
            done = subprocess.run(
                [sys.executable, __file__, "--child", mode, str(path), str(tmp / "runs")],
                capture_output=True,
                text=True,
                check=True,
            )
            out.update(json.loads(done.stdout.strip().splitlines()[-1]))
        return out


def main(sizes: list[int]) -> None:
    print(
        f"{'sessions':>9} {'wall s':>8} {'sess/s':>8} {'us/sess':>8} {'peak MB':>8} "
        f"{'ledger B':>9} {'commits':>8} {'write ms':>9} {'journal MB':>10} {'resume s':>9}"
    )
    for n in sizes:
        r = measure(n)
        print(
            f"{n:>9} {r['wall_s']:>8.2f} {n / r['wall_s']:>8.0f} {1e6 * r['wall_s'] / n:>8.0f} "
            f"{r['peak_rss_mb']:>8.0f} {r['ledger_bytes']:>9} {r['commits']:>8} "
            f"{r['write_ms_avg']:>9.3f} {r['journal_bytes'] / 1e6:>10.1f} {r['resume_prepare_s']:>9.2f}"
            f"   (resume import {r['resume_import_s']:.2f} s, pending {r['pending']})",
            flush=True,
        )


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        child(*sys.argv[2:5])
    else:
        main([int(a) for a in sys.argv[1:]] or [1000, 10_000, 100_000])
