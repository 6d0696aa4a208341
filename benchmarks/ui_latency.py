"""Key-to-effect latency of the TUI while a campaign produces ~1,000 events a second, or while
the metering gateway serves 64 busy agents.

    python benchmarks/ui_latency.py [--presses 60] [--parallelism 100] [--latency 0.2]
    python benchmarks/ui_latency.py --gateway-agents 64

`--gateway-agents N`: a `command` campaign instead, N sessions at once, each agent a `wrk`
(`apt-get install wrk`) calling the gateway back to back for the whole measurement with its
session's token, against the scripted provider of `gateway_latency.py`: every call is held on
the session's meter (a durable ledger commit) in the same process and loop as the TUI.

Runs the real app (Textual's headless driver, the engine as a Trio guest) on a fake campaign,
posts key events the way the terminal driver does, and times each key to
  - engine: the scheduler's ControlChanged event (the pause / resume / parallelism change is made),
  - screen: the status line painted with the new state (its render for the next frame; for
    + and -, the app shows the new parallelism before the engine's answer, as the user sees it).
Keys alternate p, r, +, - so the campaign keeps launching throughout. Prints the event rate
measured while keys were pressed, then median and p95 of both latencies. Goal: ≤ 100 ms.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

from textual import events

from benchtui.cli.main import tune_gc
from benchtui.engine import events as ev
from benchtui.engine import run as engine
from benchtui.ui.app import BenchApp, make_app
from benchtui.ui.widgets import StatusLine

CAMPAIGN = """name = "latency"
sessions_per_model = {sessions}
parallelism = {parallelism}
runner = "fake"

[budget]
total_usd = 1000000
per_session_usd = 0.01

[runners.fake]
kind = "fake"
cost_usd = 0.001
latency_s = {latency}
{models}
[environment]
path = "target"
"""
AGENTS = """name = "latency-gateway"
sessions_per_model = {sessions}
parallelism = {parallelism}
runner = "load"

[budget]
total_usd = 1000000
per_session_usd = 1000

[runners.load]
kind = "command"
command = ["wrk", "-t1", "-c1", "-d{seconds}s", "-s", "{script}", "{{gateway}}"]
environment = "local"
unsandboxed = true
wall_time_s = 600

[target]
kind = "none"

[[models]]
name = "openai/m"
input_usd_per_mtok = 1
output_usd_per_mtok = 1
max_output_tokens = 1000
api_base = "{provider}/v1"

[environment]
path = "target"
"""
WRK_AGENT = """wrk.method = "POST"
wrk.body = '{"model": "m", "messages": [{"role": "user", "content": "hello"}], "max_tokens": 100}'
wrk.headers["content-type"] = "application/json"
wrk.headers["authorization"] = "Bearer " .. os.getenv("OPENAI_API_KEY")
wrk.path = "/v1/chat/completions"
{delay}"""
MODELS = "".join(
    f'\n[[models]]\nname = "bench/m{i}"\ninput_usd_per_mtok = 1\noutput_usd_per_mtok = 1\n' for i in range(4)
)
KEYS = (
    ("p", lambda c: c.paused),
    ("r", lambda c: not c.paused),
    ("plus", lambda c: c.parallelism == P_HIGH),
    ("minus", lambda c: c.parallelism == P_LOW),
)
P_LOW = P_HIGH = 0


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(int(q * len(ordered)), len(ordered) - 1)]


async def measure(app: BenchApp, presses: int) -> tuple[list[float], list[float], float]:
    to_engine: list[float] = []
    to_screen: list[float] = []
    pending: dict = {}
    counted = {"events": 0}

    def listener(event: ev.Event) -> None:
        counted["events"] += 1
        if isinstance(event, ev.ControlChanged) and "check" in pending and pending["check"](event):
            pending.setdefault("engine", time.perf_counter())

    app.bus.subscribe(listener)
    status = app.main.query_one(StatusLine)
    render = status.render

    def render_and_check():  # called when the compositor paints the status line
        text = render()
        if "text" in pending and "screen" not in pending and pending["text"] in text.plain:
            pending["screen"] = time.perf_counter()
        return text

    status.render = render_and_check
    t0, n0 = time.perf_counter(), counted["events"]
    for i in range(presses):
        key, check = KEYS[i % len(KEYS)]
        pending.clear()
        pending.update(
            check=check,
            text={
                "p": "● paused",
                "r": "● running",
                "plus": f"parallelism {P_HIGH}",
                "minus": f"parallelism {P_LOW}",
            }[key],
        )
        start = time.perf_counter()
        app.post_message(events.Key(key, "+" if key == "plus" else "-" if key == "minus" else key))
        while "screen" not in pending or "engine" not in pending:
            if time.perf_counter() - start > 5:
                raise RuntimeError(f"no effect of {key!r} within 5 s")
            await asyncio.sleep(0.001)
        to_engine.append((pending["engine"] - start) * 1000)
        to_screen.append((pending["screen"] - start) * 1000)
        await asyncio.sleep(0.15)  # let the campaign run between keys
    rate = (counted["events"] - n0) / (time.perf_counter() - t0)
    return to_engine, to_screen, rate


CALL_USD = 0.0001
"""What one call of the scripted provider costs here: 80 + 20 tokens at $1 per million."""


def _spent_calls(app: BenchApp) -> float:
    """Model calls charged so far (the running sessions' spend over what one call costs)."""
    if app.scheduler is None:
        return 0.0
    ledger = app.scheduler.accounts._ledger
    spent = ledger.spent + sum(f.spent for f in ledger.running.values())
    return float(spent) / CALL_USD


async def main(args: argparse.Namespace) -> int:
    global P_LOW, P_HIGH
    P_LOW = args.gateway_agents or args.parallelism
    P_HIGH = P_LOW + 1
    with tempfile.TemporaryDirectory(prefix="benchtui-latency-") as tmp:
        root = Path(tmp)
        (root / "target").mkdir()
        (root / "target" / "README").write_text("latency target\n")
        (root / "c.toml").write_text(
            CAMPAIGN.format(
                sessions=args.sessions, parallelism=args.parallelism, latency=args.latency, models=MODELS
            )
        )
        provider = None
        if args.gateway_agents:
            import shutil
            import subprocess

            if shutil.which("wrk") is None:
                print("--gateway-agents needs wrk on PATH (apt-get install wrk)")
                return 2
            here = Path(__file__).resolve().parent
            provider = subprocess.Popen(
                [sys.executable, str(here / "gateway_latency.py"), "--provider", str(root / "p")]
            )
            while not (root / "p").exists() or not (root / "p").read_text():
                await asyncio.sleep(0.05)
            pause = f"delay = function() return {args.agent_pause_ms} end\n" if args.agent_pause_ms else ""
            (root / "agent.lua").write_text(WRK_AGENT.replace("{delay}", pause))
            seconds = int(args.presses * 0.2 + 30)
            (root / "c.toml").write_text(
                AGENTS.format(
                    sessions=args.gateway_agents, parallelism=args.gateway_agents, seconds=seconds,
                    script=root / "agent.lua", provider=(root / "p").read_text(),
                )
            )  # fmt: skip
        tune_gc()  # as the CLI does before it opens the app
        prep = engine.prepare(engine.Options(root / "c.toml", root / "runs"))
        app = make_app(prep)
        t_mount = time.perf_counter()
        try:
            async with app.run_test(size=(160, 48)) as pilot:
                while app.scheduler is None:
                    await pilot.pause(0.01)
                print(f"sessions: {len(prep.plan)}, app ready in {time.perf_counter() - t_mount:.2f} s")
                await asyncio.sleep(5.0 if args.gateway_agents else 1.0)  # every agent busy / a steady rate
                calls = _spent_calls(app)
                t0 = time.perf_counter()
                to_engine, to_screen, rate = await measure(app, args.presses)
                if args.gateway_agents:
                    made = _spent_calls(app) - calls
                    print(
                        f"model calls through the gateway while pressing keys: {made / (time.perf_counter() - t0):.0f}/s"
                    )
                app.exit()
        finally:
            if provider is not None:
                provider.terminate()
    print(f"events/s while pressing keys: {rate:.0f}")
    for name, values in (("key -> engine", to_engine), ("key -> screen", to_screen)):
        print(
            f"{name}: median {statistics.median(values):.1f} ms, p95 {percentile(values, 0.95):.1f} ms, "
            f"p99 {percentile(values, 0.99):.1f} ms, "
            f"max {max(values):.1f} ms  ({len(values)} keys)"
        )
    return 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--presses", type=int, default=60)
    parser.add_argument("--parallelism", type=int, default=100)
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--sessions", type=int, default=5000, help="per model (4 models)")
    parser.add_argument("--gateway-agents", type=int, default=0, help="a command campaign of N wrk agents")
    parser.add_argument("--agent-pause-ms", type=int, default=0, help="each agent's pause between calls")
    sys.exit(asyncio.run(main(parser.parse_args())))
