"""Kill latency of the subprocess runner: from `scheduler.kill(id)` to the worker and every
command its agent started being gone. Offline: a scripted OpenAI-compatible server on
127.0.0.1 makes each agent run a long `sleep`; the stand-in `pred` from tests/ is on PATH.

    python benchmarks/kill_latency.py [ROUNDS]      # default 10 kills per sandbox
"""

from __future__ import annotations

import os
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

import trio

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from support.mini import STAND_IN_PRED, run_campaign, write_campaign  # noqa: E402
from support.scripted_llm import Reply, ScriptedLLM  # noqa: E402
from test_minisweagent_kill import alive, pids_matching  # noqa: E402

from benchtui.engine import events as ev  # noqa: E402


async def measure(tmp: Path, sandbox: str, rounds: int) -> list[float]:
    tmp.mkdir()
    tasks = [f"sleeper{i}" for i in range(rounds)]
    seconds: list[float] = []

    def script(request):
        i = next(i for i, t in enumerate(tasks) if request.mentions(f"`{t}`"))
        return Reply(f"sleep {400 + i}.5", 100, 10)

    async def kill_each(recorder):
        done: set[str] = set()
        while len(done) < rounds:
            for started in recorder.of(ev.SessionStarted):
                i = tasks.index(started.task)
                sleeper = f"{400 + i}.5"
                if started.session in done or not pids_matching(sleeper):
                    continue
                worker = next(
                    int(m.group(1))
                    for e in recorder.of(ev.SessionProgress)
                    if e.session == started.session and (m := re.fullmatch(r"worker (\d+) started", e.note))
                )
                t0 = time.perf_counter()
                recorder.scheduler.kill(started.session)
                while alive(worker) or pids_matching(sleeper):
                    await trio.sleep(0.001)
                seconds.append(time.perf_counter() - t0)
                done.add(started.session)
            await trio.sleep(0.01)

    with ScriptedLLM(script=script) as llm:
        path = write_campaign(
            tmp,
            llm.url,
            tasks=tasks,
            parallelism=2,
            runner={"environment": sandbox, "command_timeout_s": 900},
        )
        with trio.fail_after(120):
            await run_campaign(path, tmp / "runs", during=kill_each)
    return seconds


async def main(rounds: int) -> None:
    bin_dir = Path(tempfile.mkdtemp()) / "bin"
    bin_dir.mkdir()
    (bin_dir / "pred").symlink_to(STAND_IN_PRED)
    os.environ["PATH"] = f"{bin_dir}{os.pathsep}{os.environ['PATH']}"
    os.environ["SCRIPTED_API_KEY"] = "sk-bench"
    with tempfile.TemporaryDirectory() as tmp:
        for sandbox in ("local", "bubblewrap"):
            s = await measure(Path(tmp) / sandbox, sandbox, rounds)
            print(
                f"{sandbox:>10}: kill -> gone median {1000 * statistics.median(s):.0f} ms, "
                f"max {1000 * max(s):.0f} ms over {len(s)} kills",
                flush=True,
            )


if __name__ == "__main__":
    trio.run(main, int(sys.argv[1]) if len(sys.argv) > 1 else 10)
