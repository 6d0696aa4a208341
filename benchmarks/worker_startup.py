"""How fast a mini-swe-agent session starts, and what the meter costs each model call.

    python benchmarks/worker_startup.py [--sessions 8] [--calls 10]

Prints:
- cold start: a fresh interpreter importing litellm + mini-swe-agent (what a session would pay
  if every worker were a new process);
- session start to first model call, through the whole engine: the first session (which also
  starts the pre-warmed zygote) and the following ones (a fork of the warm zygote, plus the
  session's copy of the target and the agent's set-up);
- per-call meter overhead: the engine's `meter.authorise` (a durable ledger commit) and the
  worker's full authorisation round trip (socket + engine), averaged over every call.

Runs offline: a scripted OpenAI-compatible server on 127.0.0.1 plays the model.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import trio

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from support.mini import outcome_rows, pred_on_path, run_campaign, write_campaign  # noqa: E402
from support.scripted_llm import SUBMIT, Reply, ScriptedLLM  # noqa: E402

from benchtui.engine import events as ev  # noqa: E402

IMPORTS = (
    "import litellm; from minisweagent.agents.default import DefaultAgent; "
    "from minisweagent.models.litellm_model import LitellmModel; "
    "from minisweagent.environments.local import LocalEnvironment"
)


def cold_start(repeats: int, tmp: Path) -> list[float]:
    env = {
        **os.environ,
        "MSWEA_SILENT_STARTUP": "1",
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        "MSWEA_GLOBAL_CONFIG_DIR": str(tmp / "mswea"),
    }
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        subprocess.run([sys.executable, "-c", IMPORTS], env=env, check=True, capture_output=True)
        times.append(time.perf_counter() - started)
    return times


class MonkeyPatch:
    """Just enough of pytest's monkeypatch for the test helpers."""

    def setenv(self, name: str, value: str) -> None:
        os.environ[name] = value


async def through_the_engine(sessions: int, calls: int, tmp: Path) -> tuple[list[float], list[dict]]:
    pred_on_path(tmp, MonkeyPatch())
    os.environ["SCRIPTED_API_KEY"] = "sk-bench-scripted"
    first_request: dict[str, float] = {}

    def script(request):
        first_request.setdefault(request.messages[1]["content"], time.monotonic())
        return Reply("echo hunting", 2000, 200) if request.turn < calls - 1 else Reply(SUBMIT, 2000, 20)

    started: dict[str, float] = {}
    task_of: dict[str, str] = {}

    async def watch(recorder):
        seen = 0
        while True:
            for event in recorder.events[seen:]:
                if isinstance(event, ev.SessionStarted):
                    started[event.session] = time.monotonic()
                    task_of[event.session] = event.task
            seen = len(recorder.events)
            await trio.sleep(0.001)

    with ScriptedLLM(script=script) as llm:
        path = write_campaign(
            tmp,
            llm.url,
            tasks=[f"rule{i}" for i in range(sessions)],
            parallelism=1,
            runner={"step_limit": calls + 2},
        )
        async with trio.open_nursery() as nursery:

            async def during(recorder):
                nursery.start_soon(watch, recorder)

            prep, _ = await run_campaign(path, tmp / "runs", during=during)
            nursery.cancel_scope.cancel()
    latencies = []
    for session, t0 in sorted(started.items(), key=lambda kv: kv[1]):
        first = next(t for prompt, t in first_request.items() if f"`{task_of[session]}`" in prompt)
        latencies.append(first - t0)
    return latencies, outcome_rows(prep.run_dir)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=8)
    parser.add_argument("--calls", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="bench-startup-") as tmp:
        cold = cold_start(args.repeats, Path(tmp))
        latencies, rows = trio.run(through_the_engine, args.sessions, args.calls, Path(tmp))
    waits = [r["meter_wait_ms"] for r in rows if "meter_wait_ms" in r]
    rtts = [r["meter_rtt_ms"] for r in rows if "meter_rtt_ms" in r]
    print(
        f"cold start (new interpreter + imports), median of {args.repeats}: {statistics.median(cold):.2f} s"
    )
    print(f"session start -> first model call, first session (starts the zygote): {latencies[0]:.2f} s")
    warm = latencies[1:]
    print(
        f"session start -> first model call, warm zygote (median of {len(warm)}): "
        f"{statistics.median(warm) * 1000:.0f} ms (min {min(warm) * 1000:.0f}, max {max(warm) * 1000:.0f})"
    )
    print(
        f"meter.authorise in the engine (durable ledger commit), mean per call: {statistics.mean(waits):.2f} ms"
    )
    print(
        f"authorisation round trip seen by the worker, mean per call: {statistics.mean(rtts):.2f} ms "
        f"({args.calls} calls x {len(rtts)} sessions)"
    )


if __name__ == "__main__":
    main()
