"""Key-to-effect latency of the TUI while a campaign produces ~1,000 events a second.

    python benchmarks/ui_latency.py [--presses 60] [--parallelism 100] [--latency 0.2]

Runs the real app (Textual's headless driver, the engine as a Trio guest) on a fake campaign,
posts key events the way the terminal driver does, and times each key to
  - engine: the scheduler's ControlChanged event (the pause / resume / parallelism change is made),
  - screen: the status line painted with the new state (its render for the next frame).
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
        if "engine" in pending and "screen" not in pending and pending["text"] in text.plain:
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
        while "screen" not in pending:
            if time.perf_counter() - start > 5:
                raise RuntimeError(f"no effect of {key!r} within 5 s")
            await asyncio.sleep(0.001)
        to_engine.append((pending["engine"] - start) * 1000)
        to_screen.append((pending["screen"] - start) * 1000)
        await asyncio.sleep(0.15)  # let the campaign run between keys
    rate = (counted["events"] - n0) / (time.perf_counter() - t0)
    return to_engine, to_screen, rate


async def main(args: argparse.Namespace) -> int:
    global P_LOW, P_HIGH
    P_LOW, P_HIGH = args.parallelism, args.parallelism + 1
    with tempfile.TemporaryDirectory(prefix="benchtui-latency-") as tmp:
        root = Path(tmp)
        (root / "target").mkdir()
        (root / "target" / "README").write_text("latency target\n")
        (root / "c.toml").write_text(
            CAMPAIGN.format(
                sessions=args.sessions, parallelism=args.parallelism, latency=args.latency, models=MODELS
            )
        )
        tune_gc()  # as the CLI does before it opens the app
        prep = engine.prepare(engine.Options(root / "c.toml", root / "runs"))
        app = make_app(prep)
        t_mount = time.perf_counter()
        async with app.run_test(size=(160, 48)) as pilot:
            while app.scheduler is None:
                await pilot.pause(0.01)
            print(f"sessions: {len(prep.plan)}, app ready in {time.perf_counter() - t_mount:.2f} s")
            await asyncio.sleep(1.0)  # reach a steady launch rate
            to_engine, to_screen, rate = await measure(app, args.presses)
    print(f"events/s while pressing keys: {rate:.0f}")
    for name, values in (("key -> engine", to_engine), ("key -> screen", to_screen)):
        print(
            f"{name}: median {statistics.median(values):.1f} ms, p95 {percentile(values, 0.95):.1f} ms, "
            f"max {max(values):.1f} ms  ({len(values)} keys)"
        )
    return 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--presses", type=int, default=60)
    parser.add_argument("--parallelism", type=int, default=100)
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--sessions", type=int, default=5000, help="per model (4 models)")
    sys.exit(asyncio.run(main(parser.parse_args())))
