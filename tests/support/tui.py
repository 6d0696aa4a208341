"""Opening the TUI on a stand-in campaign under Pilot, and waiting for what it shows."""

from __future__ import annotations

import time
from typing import Any

from benchtui.engine import run as engine
from benchtui.ui.app import BenchApp, make_app

from . import write_campaign

SIZE = (140, 40)


def open_app(tmp_path: Any, **kw: Any) -> BenchApp:
    app_options = {k: kw.pop(k) for k in ("start_paused", "clock") if k in kw}
    path = write_campaign(tmp_path, **kw)
    return make_app(engine.prepare(engine.Options(path, tmp_path / "runs")), **app_options)


async def until(pilot: Any, predicate: Any, timeout: float = 10.0, what: str = "") -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what or predicate}")
        await pilot.pause(0.02)
