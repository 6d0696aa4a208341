"""`[executor] kind = "ray"` against local: per-session overhead (session start -> its first model
call; `kill` -> agent gone) and throughput (short sessions spread over two nodes), with the
engine's own CPU time per session. A real two-node cluster on this machine (tests/ray_support.py:
a head and node_b as a separate `ray start`), the command runner with the scripted agent CLI in
bubblewrap, a scripted provider on 127.0.0.1, the stand-in `pred`.

    python benchmarks/ray_executor.py [--sessions 1000] [--rounds 8] [--parallelism 64]
"""

from __future__ import annotations

import argparse
import os
import resource
import signal
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import trio

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from support.mini import STAND_IN_PRED, journal, outcome_rows, run_campaign  # noqa: E402
from support.ray import LocalCluster, write_campaign  # noqa: E402
from support.scripted_upstream import Answer, ScriptedUpstream  # noqa: E402
from test_minisweagent_kill import pids_matching  # noqa: E402

from benchtui.engine import events as ev  # noqa: E402


def executors(cluster: LocalCluster) -> dict[str, dict | None]:
    pinned = {"kind": "ray", "address": cluster.address, "resources": {"node_b": 0.01}, "num_cpus": 0}
    return {"local": None, "ray (node_b)": pinned}


async def first_call(tmp: Path, executor: dict | None, rounds: int) -> list[float]:
    """Session start (its SessionStarted event) -> its agent's first request at the provider."""
    firsts: list[float] = []
    starts: list[float] = []

    def script(call):
        if len(call.body["messages"]) == 1:
            firsts.append(time.monotonic())
        return Answer(text="No luck.")

    async def watch(recorder):
        for seen in range(1, rounds + 1):
            await recorder.until(lambda n=seen: len(recorder.of(ev.SessionStarted)) >= n)
            starts.append(time.monotonic())

    with ScriptedUpstream(script) as up:
        path = write_campaign(
            tmp, up.url, executor=executor, models=("openai/scripted-a",), repeats=rounds, parallelism=1
        )
        await run_campaign(path, tmp / "state", during=watch)
    return [f - s for s, f in zip(starts, firsts, strict=True)]


async def kill_latency(tmp: Path, executor: dict | None, rounds: int) -> list[float]:
    """`scheduler.kill` -> the agent's process is gone, one sleeping session at a time."""
    seconds: list[float] = []
    n = iter(range(10**6))

    def script(call):
        return Answer(text=f"RUN: sleep 7{next(n)}.25")

    async def kill_each(recorder):
        for i in range(rounds):
            marker = f"sleep 7{i}.25"
            while not pids_matching(marker):
                await trio.sleep(0.005)
            started = recorder.of(ev.SessionStarted)[i]
            t0 = time.monotonic()
            recorder.scheduler.kill(started.session)
            while pids_matching(marker):
                await trio.sleep(0.002)
            seconds.append(time.monotonic() - t0)

    with ScriptedUpstream(script) as up:
        path = write_campaign(
            tmp, up.url, executor=executor, models=("openai/scripted-a",), repeats=rounds, parallelism=1
        )
        await run_campaign(path, tmp / "state", during=kill_each)
    return seconds


async def throughput(tmp: Path, executor: dict | None, sessions: int, parallelism: int) -> dict:
    with ScriptedUpstream(lambda call: Answer(text="No luck.")) as up:
        path = write_campaign(
            tmp, up.url, executor=executor, repeats=sessions // 2, parallelism=parallelism,
            budget={"total_usd": 1000.0},
        )  # fmt: skip
        cpu0, t0 = resource.getrusage(resource.RUSAGE_SELF), time.monotonic()
        prep, _ = await run_campaign(path, tmp / "state")
        wall, cpu1 = time.monotonic() - t0, resource.getrusage(resource.RUSAGE_SELF)
    states = Counter(r["state"] for r in journal(prep.run_dir).values())
    nodes = Counter(
        (row.get("node") or {}).get("node_id", "this machine")[:8] for row in outcome_rows(prep.run_dir)
    )
    engine_cpu = (cpu1.ru_utime + cpu1.ru_stime) - (cpu0.ru_utime + cpu0.ru_stime)
    return {
        "wall": wall,
        "states": dict(states),
        "nodes": dict(nodes),
        "engine_cpu_ms": 1000 * engine_cpu / sessions,
    }


def ms(values: list[float]) -> str:
    return (
        f"median {1000 * statistics.median(values):.0f} ms, max {1000 * max(values):.0f} ms (n={len(values)})"
    )


async def main(args: argparse.Namespace, cluster: LocalCluster, root: Path) -> None:
    for name, executor in executors(cluster).items():
        starts = await first_call(root / f"first-{name[:5]}", executor, args.rounds)
        kills = await kill_latency(root / f"kill-{name[:5]}", executor, args.rounds)
        print(
            f"{name:13} start -> first model call: {ms(starts)}; kill -> agent gone: {ms(kills)}", flush=True
        )
    spread = {"kind": "ray", "address": cluster.address, "num_cpus": 0, "spread": True}
    for name, executor in {"local": None, "ray (spread)": spread}.items():
        found = await throughput(root / f"many-{name[:5]}", executor, args.sessions, args.parallelism)
        print(
            f"{name:13} {args.sessions} sessions at parallelism {args.parallelism}: {found['wall']:.1f} s, "
            f"{args.sessions / found['wall']:.1f} sessions/s, engine CPU {found['engine_cpu_ms']:.1f} ms/session; "
            f"states {found['states']}; sessions per node {found['nodes']}",
            flush=True,
        )


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--sessions", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--parallelism", type=int, default=64)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="bench-ray-"))
    (root / "bin").mkdir()
    (root / "bin" / "pred").symlink_to(STAND_IN_PRED)
    os.environ["PATH"] = f"{root / 'bin'}{os.pathsep}{os.environ['PATH']}"
    os.environ["SCRIPTED_API_KEY"] = "sk-bench"
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # `timeout` too stops the cluster
    cluster = LocalCluster()
    try:
        t0 = time.monotonic()
        cluster.start()
        print(f"two-node cluster up in {time.monotonic() - t0:.1f} s; load average {os.getloadavg()[0]:.1f}")
        trio.run(main, args, cluster, root)
        print(f"load average at the end {os.getloadavg()[0]:.1f}")
    finally:
        cluster.stop()
