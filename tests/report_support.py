"""Campaigns with scripted outcomes (the FakeRunner's `bug_sessions`), run in-process to the end."""

from __future__ import annotations

import json
from pathlib import Path

import trio

from benchtui import engine
from benchtui import events as ev


def scripted_toml(
    *,
    name: str = "t",
    bugs: dict[str, list[int]],
    n: int = 8,
    tasks: list[str] | None = None,
    cap: str = "0.07",
    total: str = "0.14",
    enforce: bool = True,
    extra: str = "",
) -> str:
    sessions = (
        f"tasks = {json.dumps(tasks)}\nrepeats = {n // len(tasks)}" if tasks else f"sessions_per_model = {n}"
    )
    scripted = ", ".join(f'"{m}" = {idx}' for m, idx in bugs.items())
    return f'''name = "{name}"
{sessions}
parallelism = 3
runner = "fake"

[budget]
total_usd = {total}
per_model_usd = {cap}
per_session_usd = 0.01
enforce = {str(enforce).lower()}

[runners.fake]
kind = "fake"
cost_usd = 0.01
bug_sessions = {{ {scripted} }}
{extra}
[[models]]
name = "fake/model-a"
input_usd_per_mtok = 3.0
output_usd_per_mtok = 15.0

[[models]]
name = "fake/model-b"
input_usd_per_mtok = 3.0
output_usd_per_mtok = 15.0

[environment]
path = "target"
'''


def run_campaign(tmp_path: Path, fresh: bool = False, **kw) -> Path:
    (tmp_path / "target").mkdir(exist_ok=True)
    path = tmp_path / "c.toml"
    path.write_text(scripted_toml(**kw))
    prep = engine.prepare(engine.Options(path, tmp_path / "runs", fresh=fresh))
    try:
        assert trio.run(engine.run, prep, ev.EventBus()) is True
    finally:
        prep.lock.release()
    return prep.run_dir
