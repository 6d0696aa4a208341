"""`python -m benchtui.ui.screenshots [OUT_DIR]`: the README's screenshots, from a demo campaign.

The campaign uses the scripted `DemoRunner` (no model calls) and a clock that advances by fixed
steps per event, so the same command draws the same pictures: the main screen mid-campaign, the
campaign paused, the runner picker, and the summary of a finished campaign.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from textual.pilot import Pilot

from benchtui.engine import events as ev
from benchtui.engine import run as engine
from benchtui.ui.app import BenchApp, make_app

SIZE = (132, 40)
MODELS = (("acme/coder-xl", 3.0, 15.0), ("acme/coder-mini", 0.25, 1.25), ("open/hunter-7b", 0.6, 2.4))
RUNNER = "demo"


def campaign_toml(hold_from: int) -> str:
    models = "".join(
        f'\n[[models]]\nname = "{name}"\ninput_usd_per_mtok = {i}\noutput_usd_per_mtok = {o}\n'
        for name, i, o in MODELS
    )
    return f"""name = "demo"
sessions_per_model = 6
parallelism = 1
runner = "demo"

[budget]
total_usd = 3.0
per_session_usd = 0.25

[runners.demo]
kind = "{RUNNER}"
hold_from = {hold_from}

[runners.demo-quick]
kind = "{RUNNER}"
steps = 2

[runners.fake]
kind = "fake"
cost_usd = 0.05
{models}
[environment]
path = "target"
"""


class DemoClock:
    """Elapsed time that moves with the campaign, not with the wall clock."""

    STEP = {ev.SessionStarted: 3.0, ev.SessionProgress: 11.0, ev.SessionEnded: 2.0}

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def tick(self, event: ev.Event) -> None:
        self.now += self.STEP.get(type(event), 0.0)


@contextlib.contextmanager
def demo_run(hold_from: int) -> Iterator[tuple[BenchApp, DemoClock]]:
    """A fresh demo campaign in a temp dir (the cwd meanwhile, so paths on screen are short)."""
    old = Path.cwd()
    with tempfile.TemporaryDirectory(prefix="benchtui-demo-") as tmp:
        os.chdir(tmp)
        try:
            Path("target").mkdir()
            Path("target/README").write_text("demo target\n")
            Path("demo.toml").write_text(campaign_toml(hold_from))
            prep = engine.prepare(engine.Options(Path("demo.toml"), Path("runs")))
            clock = DemoClock()
            app = make_app(prep, clock=clock, start_paused=True)
            app.bus.subscribe(clock.tick)
            yield app, clock
        finally:
            os.chdir(old)


async def settle(app: BenchApp, pilot: Pilot[Any], done: Callable[[], object], timeout: float = 30) -> None:
    async with asyncio.timeout(timeout):
        while not done():
            await pilot.pause(0.02)
    app.redraw()
    await pilot.pause()


def running_quietly(app: BenchApp, n: int) -> Callable[[], bool]:
    """n sessions running, each through all its calls (nothing left to change on screen)."""

    def check() -> bool:
        running = [s for s in app.view.sessions.values() if s.state == "running"]
        return len(running) == n and all(s.calls == 4 and len(s.notes) == 4 for s in running)

    return check


async def mid_campaign(out: Path) -> list[Path]:
    shots = []
    with demo_run(hold_from=2) as (app, _):
        async with app.run_test(size=SIZE) as pilot:
            await settle(app, pilot, lambda: app.scheduler is not None)
            app.action_resume()
            await settle(app, pilot, running_quietly(app, 1))
            for n in (2, 3, 4):  # one at a time, so the event log reads the same every time
                app.action_parallelism(1)
                await settle(app, pilot, running_quietly(app, n))
            app.main.table.select("acme_coder-xl-0002")
            await settle(app, pilot, lambda: True)
            shots.append(Path(app.save_screenshot("main.svg", str(out))))
            app.action_pause()
            await settle(app, pilot, lambda: app.view.paused)
            shots.append(Path(app.save_screenshot("paused.svg", str(out))))
            app.action_change_runner()
            await settle(app, pilot, lambda: app.screen is not app.main)
            shots.append(Path(app.save_screenshot("runner-picker.svg", str(out))))
            app.pop_screen()
    return shots


async def finished(out: Path) -> list[Path]:
    with demo_run(hold_from=99) as (app, _):
        async with app.run_test(size=SIZE) as pilot:
            await settle(app, pilot, lambda: app.scheduler is not None)
            app.action_resume()
            await settle(app, pilot, lambda: app.finished and getattr(app.screen, "report", None))
            return [Path(app.save_screenshot("finished.svg", str(out)))]


def main(argv: list[str]) -> int:
    out = Path(argv[0] if argv else "screenshots").resolve()
    out.mkdir(parents=True, exist_ok=True)
    for shot in asyncio.run(mid_campaign(out)) + asyncio.run(finished(out)):
        print(shot)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
