"""One Top50 run through benchtui beside the benchmark's runner alone, against the same scripted
OpenAI-compatible server, in one run: wall time, CPU (the process and all its children), and
benchtui's overhead per model call. The machine's fsync latency is printed beside them (every
hold is a durable journal line: benchmarks/disk.py).

Both runs are the benchmark's own `python -m benchmark.run_top50` in the same rebuilt image state
(placement `checkout`: a private mount namespace, as root): "alone" calls the scripted server
directly with the namespace made by the same code; "through benchtui" is `benchtui --no-ui` on a
one-model, one-run campaign (engine, gateway, meter, checkpoint watch, both verifiers). The
scripted model (tests/support/top50_model.py) submits nothing: every episode runs its 10
generations (502 calls).

    BENCHTUI_BENCHMARK_CHECKOUT=../ext/benchmark BENCHTUI_LIBRARY_CHECKOUT=../ext/problem-reductions \\
      python benchmarks/top50_overhead.py            # as root; BENCHTUI_SHARED: ../shared

`--standin` runs the stand-in of the runner's contract (tests/support/top50_standin) instead:
no checkout needed, seconds not minutes, but its calls cost nothing of a real runner's CPU.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from disk import fsync_latency

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from support.scripted_upstream import Answer, ScriptedUpstream  # noqa: E402
from support.top50 import make_benchmark, make_library  # noqa: E402
from support.top50_model import Top50Model  # noqa: E402

from benchtui.runners.top50 import checkout, ids  # noqa: E402
from benchtui.runners.top50.runner import benchmark_env  # noqa: E402

STAND_IN_PRED = ROOT / "tests" / "support" / "stand_in_pred.py"


def children_cpu() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def timed(argv: list[str], env: dict[str, str], cwd: Path | None = None) -> tuple[float, float, str]:
    cpu, start = children_cpu(), time.monotonic()
    done = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True)
    wall = time.monotonic() - start
    return (
        wall,
        children_cpu() - cpu,
        (done.stdout + done.stderr).strip().splitlines()[-1:][0]
        if (done.stdout + done.stderr).strip()
        else "",
    )


def make_pred(folder: Path, shared: Path) -> Path:
    pred = folder / "pred"
    transcript = shared / "pred-transcripts" / "8df8ac04.jsonl"
    python = shutil.which("python3", path="/usr/bin:/bin") or sys.executable
    pred.write_text(f'#!/bin/sh\nSTAND_IN_PRED_TRANSCRIPT={transcript} exec {python} {STAND_IN_PRED} "$@"\n')
    pred.chmod(0o755)
    return pred


def alone(bench: Path, library: Path, pred: Path, api_base: str, work: Path) -> tuple[float, float, str]:
    """The benchmark's runner in the rebuilt image state, calling the server itself."""
    stage = work / "alone-stage"
    stage.mkdir()
    out = stage / "out"
    out.mkdir()
    pins = checkout.Pins(checkout.library_commit(library), checkout.pred_version(str(pred)))
    with ids.slot(42000) as slot:
        env = {**benchmark_env("openai/model-a", api_base, "sk-scripted"), **slot.env()}
        argv, run_env = checkout.write_plan(
            stage, library=library, benchmark=bench, pred=str(pred), pins=pins, oracle_gid=slot.oracle,
            python=sys.executable, env=env, out=out,
        )  # fmt: skip
        return timed(argv, run_env)


def through_benchtui(
    bench: Path, library: Path, pred: Path, api_base: str, work: Path
) -> tuple[float, float, str]:
    campaign = work / "campaign.toml"
    campaign.write_text(
        f"""name = "overhead"
runner = "top50"
sessions_per_model = 1
[budget]
total_usd = 100.0
[runners.top50]
kind = "top50"
placement = "checkout"
benchmark = "{bench}"
pred = "{pred}"
[[models]]
name = "openai/model-a"
input_usd_per_mtok = 1.0
output_usd_per_mtok = 2.0
max_output_tokens = 8192
api_base = "{api_base}"
api_key_env = "SCRIPTED_API_KEY"
[environment]
path = "{library}"
tools = ["pred"]
"""
    )
    env = {**os.environ, "SCRIPTED_API_KEY": "sk-scripted", "PATH": f"{pred.parent}:{os.environ['PATH']}"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    argv = [sys.executable, "-m", "benchtui", str(campaign), "--no-ui", "--state-dir", str(work / "state")]
    return timed(argv, env)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--standin", action="store_true", help="the stand-in of the runner's contract")
    args = parser.parse_args()
    if os.geteuid() != 0:
        print("top50_overhead: placement checkout needs root", file=sys.stderr)
        return 2
    work = Path(tempfile.mkdtemp(prefix="benchtui-top50-overhead-"))
    os.chmod(work, 0o755)
    try:
        if args.standin:
            bench, library = make_benchmark(work, calls=10, triage_calls=2), make_library(work)
            pred = STAND_IN_PRED
            script = lambda call: Answer(text="ok", input_tokens=1000, output_tokens=50)  # noqa: E731
        else:
            bench = Path(os.environ["BENCHTUI_BENCHMARK_CHECKOUT"]).resolve()
            library = Path(os.environ["BENCHTUI_LIBRARY_CHECKOUT"]).resolve()
            pred = make_pred(work, Path(os.environ.get("BENCHTUI_SHARED", ROOT.parent / "shared")))
            script = Top50Model(library, {})
        print(f"fsync latency here (median of a 4 KiB write + fsync): {fsync_latency(work) * 1000:.2f} ms")
        rows = []
        for name, run in (("alone", alone), ("through benchtui", through_benchtui)):
            with ScriptedUpstream(script) as up:
                wall, cpu, last = run(bench, library, pred, up.url, work)  # its url ends in /v1
                rows.append((name, wall, cpu, len(up.calls), last))
        print(f"{'':18} {'wall s':>8} {'CPU s':>8} {'calls':>6}  last line")
        for name, wall, cpu, calls, last in rows:
            print(f"{name:18} {wall:8.1f} {cpu:8.1f} {calls:6d}  {last[:70]}")
        (_, w0, c0, n0, _), (_, w1, c1, n1, _) = rows
        calls = max(1, min(n0, n1))
        print(
            f"benchtui's overhead per model call: {(w1 - w0) / calls * 1000:+.1f} ms wall, "
            f"{(c1 - c0) / calls * 1000:+.1f} ms CPU ({n1} calls through benchtui, {n0} alone)"
        )
        print(f"fsync latency after: {fsync_latency(work) * 1000:.2f} ms")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
