"""benchtui beside Inspect AI run the way its users run it, whole processes, alternating, in one run.

Contestants (each a whole process: import, start, run, logs, exit):
- benchtui: the real CLI, `benchtui --no-ui` on a FakeRunner campaign (zero latency, 2 models,
  parallelism 16), every event durable (the journal fsynced once a group commit, F7);
- `--also CHECKOUT`: the same CLI from another checkout (e.g. the commit before a change), run
  with this interpreter, for a before/after in the same run;
- Inspect AI's CLI, `inspect eval` of one task of N samples (`generate()`, `match()`) on
  `mockllm/model` with `--max-connections 16`: its default logging (an .eval log with every
  sample, realtime sample buffer), and its fastest documented logging (`--no-log-samples
  --no-log-realtime`). `--display none` for both (benchtui's lines go to /dev/null too).

Printed: wall and CPU seconds of each round, the medians; the machine's fsync latency (a 4 KiB
write + fsync in the work folder, median of 50) before every round, since it varies from one
minute to the next on a shared disk; and, from one more round of each under `strace -f -c`
(`apt-get install -y strace`; the script says when it is missing), fsync-family calls and renames
per session.

Inspect's `mockllm` counts tokens with tiktoken's o200k_base, which tiktoken downloads once into
its cache; offline, the script points TIKTOKEN_CACHE_DIR at the copy litellm (a dependency of
benchtui) ships in tiktoken's cache layout, unless it is set already.

Inspect AI is not a dependency of benchtui: install it in a venv of its own and name its CLI:

    python -m venv /tmp/inspect-venv && /tmp/inspect-venv/bin/pip install inspect-ai
    python benchmarks/vs_inspect.py [SESSIONS] [--rounds 3] [--inspect /tmp/inspect-venv/bin/inspect]
                                    [--also /path/to/other/checkout] [--dir /tmp]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from disk import fsync_latency

MODELS = 2
PARALLELISM = 16
SYNCS = ("fsync", "fdatasync", "sync_file_range", "syncfs", "msync")
RENAMES = ("rename", "renameat", "renameat2")

TASK = """
import os
from inspect_ai import Task, task
from inspect_ai.dataset import Sample
from inspect_ai.scorer import match
from inspect_ai.solver import generate


@task
def bench():
    n = int(os.environ["BENCH_SAMPLES"])
    return Task(dataset=[Sample(input=f"q{i}", target="bug") for i in range(n)], solver=generate(), scorer=match())
"""

CHECK_LOG = """
import sys
from pathlib import Path
from inspect_ai.log import read_eval_log
[path] = Path(sys.argv[1]).glob("*.eval")
log = read_eval_log(str(path), header_only=True)
assert log.status == "success", log.error
print(log.results.completed_samples)
"""

OTHER_CHECKOUT = "import sys; sys.path.insert(0, sys.argv.pop(1)); from benchtui.cli.main import main; sys.exit(main(sys.argv[1:]))"


@dataclass
class Contestant:
    name: str
    argv: list[str]
    kind: str  # benchtui | inspect
    walls: list[float] = field(default_factory=list)
    cpus: list[float] = field(default_factory=list)
    syncs: int | None = None
    renames: int | None = None


def campaign(folder: Path, sessions: int) -> Path:
    (folder / "target").mkdir(exist_ok=True)
    (folder / "target" / "README").write_text("a stand-in target\n")
    models = "".join(
        f'\n[[models]]\nname = "bench/m{i}"\ninput_usd_per_mtok = 1.0\noutput_usd_per_mtok = 2.0\n'
        for i in range(MODELS)
    )
    path = folder / "fake.toml"
    path.write_text(
        f'name = "vs-inspect"\nsessions_per_model = {sessions // MODELS}\nparallelism = {PARALLELISM}\n'
        f'runner = "fake"\n[budget]\ntotal_usd = {sessions}\n[runners.fake]\nkind = "fake"\n'
        f'cost_usd = 0.001\n{models}\n[environment]\npath = "target"\n'
    )
    return path


def timed(argv: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, float]:
    """Wall and CPU (user + system) seconds of one whole child process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(
        argv, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{argv[0]} failed ({done.returncode}): {done.stderr.strip()[-2000:]}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def tiktoken_cache() -> dict[str, str]:
    """Where tiktoken finds o200k_base without the network: litellm's copy (see the docstring)."""
    if "TIKTOKEN_CACHE_DIR" in os.environ:
        return {}
    spec = importlib.util.find_spec("litellm")
    if spec is None or spec.origin is None:
        return {}
    folder = Path(spec.origin).parent / "litellm_core_utils" / "tokenizers"
    return {"TIKTOKEN_CACHE_DIR": str(folder)} if folder.is_dir() else {}


def prepared(who: Contestant, work: Path, sessions: int) -> tuple[list[str], dict[str, str]]:
    """A fresh state (run dir, log dir) for one process of `who`; its argv and environment."""
    out = work / "out"
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir()
    env = {**os.environ, **tiktoken_cache(), "BENCH_SAMPLES": str(sessions), "INSPECT_LOG_DIR": str(out)}
    extra = ["--state-dir", str(out)] if who.kind == "benchtui" else ["--log-dir", str(out)]
    return who.argv + extra, env


def check(who: Contestant, work: Path, sessions: int, inspect_python: str | None) -> None:
    out = work / "out"
    if who.kind == "benchtui":
        journal = (out / "vs-inspect" / "sessions.jsonl").read_text().splitlines()
        done = {json.loads(line)["session"] for line in journal if '"state":"done"' in line}
        assert len(done) == sessions, f"{who.name} finished {len(done)} of {sessions}"
    elif inspect_python:
        done = subprocess.run([inspect_python, "-c", CHECK_LOG, str(out)], capture_output=True, text=True)
        assert done.returncode == 0 and int(done.stdout) == sessions, (
            f"{who.name}: {done.stderr or done.stdout}"
        )


def strace_counts(argv: list[str], cwd: Path, env: dict[str, str]) -> tuple[int, int]:
    """fsync-family calls and renames of a whole process tree, by `strace -f -c`."""
    table = cwd / "strace.txt"
    trace = ",".join(SYNCS + RENAMES)
    subprocess.run(
        ["strace", "-f", "-c", "-qq", "--seccomp-bpf", "-e", f"trace={trace}", "-o", str(table), *argv],
        cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True,
    )  # fmt: skip
    counts: dict[str, int] = {}
    for line in table.read_text().splitlines():
        m = re.match(r"\s*[\d.]+\s+[\d.]+\s+\d+\s+(\d+)\s+(?:\d+\s+)?(\w+)\s*$", line)
        if m:
            counts[m.group(2)] = int(m.group(1))
    return sum(counts.get(s, 0) for s in SYNCS), sum(counts.get(r, 0) for r in RENAMES)


def contestants(args: argparse.Namespace, work: Path, path: Path) -> list[Contestant]:
    exe = shutil.which("benchtui", path=str(Path(sys.executable).parent)) or "benchtui"
    found = [Contestant("benchtui", [exe, "--no-ui", "--fresh", str(path)], "benchtui")]
    if args.also:
        rev = subprocess.run(
            ["git", "-C", args.also, "rev-parse", "--short", "HEAD"], capture_output=True, text=True
        )
        name = f"benchtui@{rev.stdout.strip() or Path(args.also).name}"
        found.append(
            Contestant(
                name,
                [sys.executable, "-c", OTHER_CHECKOUT, args.also, "--no-ui", "--fresh", str(path)],
                "benchtui",
            )
        )
    if args.inspect:
        task = work / "bench_task.py"
        task.write_text(TASK)
        base = [
            args.inspect,
            "eval",
            task.name,
            "--model",
            "mockllm/model",
            "--max-connections",
            str(PARALLELISM),
            "--display",
            "none",
        ]
        found.append(Contestant("inspect (default logging)", base, "inspect"))
        found.append(Contestant("inspect --no-log-samples --no-log-realtime", base + ["--no-log-samples", "--no-log-realtime"], "inspect"))  # fmt: skip
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sessions", nargs="?", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--inspect", default=shutil.which("inspect"), help="Inspect AI's CLI (default: on PATH)"
    )
    parser.add_argument("--also", help="another benchtui checkout to run beside this one")
    parser.add_argument(
        "--dir", default=tempfile.gettempdir(), help="where the runs write (default: the temp dir)"
    )
    args = parser.parse_args()
    if not args.inspect:
        print(
            "Inspect AI's CLI not found (see this script's docstring to install it): benchtui alone",
            file=sys.stderr,
        )
    inspect_python = str(Path(args.inspect).parent / "python") if args.inspect else None
    with tempfile.TemporaryDirectory(dir=args.dir, prefix="vs-inspect-") as tmp:
        work = Path(tmp)
        everyone = contestants(args, work, campaign(work, args.sessions))
        print(f"{args.sessions} sessions/samples, {MODELS} models, parallelism {PARALLELISM}, {args.rounds} rounds "
              f"({os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}); work folder {work}")  # fmt: skip
        latencies = []
        for r in range(args.rounds):
            order = everyone[r % len(everyone) :] + everyone[: r % len(everyone)]
            latencies.append(fsync_latency(work))
            line = []
            for who in order:
                argv, env = prepared(who, work, args.sessions)
                wall, cpu = timed(argv, work, env)
                check(who, work, args.sessions, inspect_python)
                who.walls.append(wall)
                who.cpus.append(cpu)
                line.append(f"{who.name} {wall:.2f} s / {cpu:.2f} CPU-s")
            print(f"round {r + 1} (fsync {latencies[-1] * 1000:.2f} ms): " + "; ".join(line), flush=True)
        latencies.append(fsync_latency(work))
        if shutil.which("strace"):
            for who in everyone:
                argv, env = prepared(who, work, args.sessions)
                who.syncs, who.renames = strace_counts(argv, work, env)
        else:
            print("strace not found (apt-get install -y strace): fsyncs not counted", file=sys.stderr)
    print(f"\nfsync latency (4 KiB write + fsync, median of 50) around the rounds: "
          f"{', '.join(f'{x * 1000:.2f}' for x in latencies)} ms")  # fmt: skip
    print(
        f"\n{'':<44} {'median wall':>12} {'(min-max)':>15} {'CPU-s':>7} {'fsyncs/session':>15} {'renames/session':>16}"
    )
    for who in everyone:
        syncs = f"{who.syncs / args.sessions:.3f}" if who.syncs is not None else "-"
        renames = f"{who.renames / args.sessions:.3f}" if who.renames is not None else "-"
        print(f"{who.name:<44} {statistics.median(who.walls):>10.2f} s {min(who.walls):>6.2f}-{max(who.walls):<6.2f} s "
              f"{statistics.median(who.cpus):>7.2f} {syncs:>15} {renames:>16}")  # fmt: skip


if __name__ == "__main__":
    main()
