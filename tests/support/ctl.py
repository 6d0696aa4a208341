"""Helpers of the ctl tests: a prepared run, `benchtui ctl` from a thread, sessions in their call."""

from __future__ import annotations

import trio

from benchtui.cli import main as cli
from benchtui.engine import events as ev
from benchtui.engine import run as engine
from support import Recorder, write_campaign


def prepare(tmp_path, state_dir=None, **kw) -> engine.PreparedRun:
    path = write_campaign(tmp_path, **kw)
    return engine.prepare(engine.Options(path, state_dir or tmp_path / "runs"))


async def ctl(capsys, *argv) -> tuple[int, str]:
    """`benchtui ctl ARGV` in a thread (the client blocks, the campaign runs meanwhile)."""
    rc = await trio.to_thread.run_sync(cli.main, ["ctl", *map(str, argv)])
    out, err = capsys.readouterr()
    return rc, (out + err).strip()


def in_call(rec: Recorder) -> int:
    """Sessions whose (fake) call was authorised: asleep in it until the clock moves."""
    return sum(1 for p in rec.of(ev.SessionProgress) if p.calls == 1 and p.cost_usd == 0)
