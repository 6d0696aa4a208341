"""10k zero-latency sessions, benchtui against Inspect AI, side by side in one run.

benchtui: the real CLI (`benchtui --no-ui`) on a FakeRunner campaign of 10 models, parallelism 16
(every event durable: journal, result rows and ledger fsynced before the session acts on it).
Inspect AI: `inspect_ai.eval` of one task of N samples on its `mockllm` model (usage given, so no
tokenizer download), `generate()` + `match()`, max_connections 16, its log written to a temp dir.
Each runs in its own process, whole (import, start, run, logs, exit), alternately `--rounds` times;
printed: wall and CPU seconds per round, the medians, and the ratio of the median walls.

Inspect AI is an optional dependency of this script only: `pip install inspect-ai` (never in
pyproject's extras). Without it, benchtui's figures are printed alone.

    python benchmarks/vs_inspect.py [SESSIONS] [--rounds N]      # default 10000, 3 rounds
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

MODELS = 10
PARALLELISM = 16

INSPECT_CHILD = """
import sys, tempfile
from inspect_ai import Task, eval as inspect_eval
from inspect_ai.dataset import Sample
from inspect_ai.model import ModelOutput, ModelUsage, get_model
from inspect_ai.scorer import match
from inspect_ai.solver import generate

def reply(*_args):
    out = ModelOutput.from_content(model="mockllm", content="bug")
    out.usage = ModelUsage(input_tokens=10, output_tokens=1, total_tokens=11)
    return out

n = int(sys.argv[1])
task = Task(dataset=[Sample(input=f"q{i}", target="bug") for i in range(n)], solver=generate(), scorer=match())
with tempfile.TemporaryDirectory() as logs:
    [log] = inspect_eval(task, model=get_model("mockllm/model", custom_outputs=reply),
                         max_connections=16, log_dir=logs, display="none")
    assert log.status == "success", log.error
    assert log.results.completed_samples == n, log.results.completed_samples
"""


def campaign(dirpath: Path, sessions: int) -> Path:
    (dirpath / "target").mkdir(exist_ok=True)
    models = "".join(
        f'\n[[models]]\nname = "bench/m{i}"\ninput_usd_per_mtok = 1.0\noutput_usd_per_mtok = 2.0\n'
        for i in range(MODELS)
    )
    path = dirpath / "fake.toml"
    path.write_text(
        f'name = "vs-inspect"\nsessions_per_model = {sessions // MODELS}\nparallelism = {PARALLELISM}\n'
        'runner = "fake"\n[budget]\ntotal_usd = 1000000\n[runners.fake]\nkind = "fake"\n'
        f'cost_usd = 0.001\n{models}\n[environment]\npath = "target"\n'
    )
    return path


def timed(argv: list[str], cwd: Path) -> tuple[float, float]:
    """Wall and CPU (user + system) seconds of one whole child process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(argv, cwd=cwd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def benchtui_round(tmp: Path, path: Path, sessions: int) -> tuple[float, float]:
    runs = tmp / "runs"
    shutil.rmtree(runs, ignore_errors=True)
    exe = shutil.which("benchtui", path=str(Path(sys.executable).parent)) or "benchtui"
    wall, cpu = timed([exe, "--no-ui", "--fresh", "--state-dir", str(runs), str(path)], tmp)
    journal = (runs / "vs-inspect" / "sessions.jsonl").read_text().splitlines()
    done = {json.loads(line)["session"] for line in journal if '"state":"done"' in line}
    assert len(done) == sessions, f"benchtui finished {len(done)} of {sessions}"
    return wall, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sessions", nargs="?", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    have_inspect = importlib.util.find_spec("inspect_ai") is not None
    if not have_inspect:
        print("inspect-ai is not installed (pip install inspect-ai): benchtui alone", file=sys.stderr)
    rows: dict[str, list[tuple[float, float]]] = {"benchtui": [], "inspect_ai": []}
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        path = campaign(tmp, args.sessions)
        env_note = f"{os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}"
        print(f"{args.sessions} sessions, parallelism {PARALLELISM}, {args.rounds} rounds ({env_note})")
        for r in range(args.rounds):
            rows["benchtui"].append(benchtui_round(tmp, path, args.sessions))
            if have_inspect:
                rows["inspect_ai"].append(
                    timed([sys.executable, "-c", INSPECT_CHILD, str(args.sessions)], tmp)
                )
            line = "  ".join(
                f"{name} {walls[-1][0]:6.2f} s wall {walls[-1][1]:6.2f} CPU-s"
                for name, walls in rows.items()
                if walls
            )
            print(f"round {r + 1}: {line}", flush=True)
    medians = {name: statistics.median(w for w, _ in v) for name, v in rows.items() if v}
    cpus = {name: statistics.median(c for _, c in v) for name, v in rows.items() if v}
    for name, wall in medians.items():
        print(
            f"{name:>10}: median {wall:6.2f} s wall, {cpus[name]:6.2f} CPU-s, "
            f"{args.sessions / wall:7.0f} sessions/s, {1e6 * cpus[name] / args.sessions:5.0f} CPU-us/session"
        )
    if len(medians) == 2:
        print(
            f"benchtui is {medians['inspect_ai'] / medians['benchtui']:.2f}x Inspect AI's speed (median walls)"
        )


if __name__ == "__main__":
    main()
