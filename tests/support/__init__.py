"""Helpers for the engine tests: campaign files, run-dir readers, the CLI as a subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from decimal import Decimal
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
SHARED = ROOT.parent / "shared"
"""Data of other projects (the benchmark's contracts, pred's transcripts), beside the checkout in
CI and here; never copied into the repository: tests reading it skip with a reason without it."""


def results_schema() -> dict[str, Any]:
    """The JSON Schema of our results files, generated from our own models (`benchtui schema --results`)."""
    from benchtui.engine.results_format import json_schema

    return json_schema()


def campaign_toml(
    *,
    name: str = "t",
    sessions: int = 5,
    parallelism: int = 4,
    total: str = "0.20",
    per_model: str | None = None,
    per_session: str | None = "0.03",
    enforce: bool = True,
    cost: str = "0.03",
    latency: float = 0.0,
    models: tuple[str, ...] = ("fake/model-a", "fake/model-b"),
    extra_runners: str = "",
    extra: str = "",
    env_path: str = "target",
) -> str:
    budget = [f"total_usd = {total}", f"enforce = {str(enforce).lower()}"]
    if per_model:
        budget.append(f"per_model_usd = {per_model}")
    if per_session:
        budget.append(f"per_session_usd = {per_session}")
    model_tables = "".join(
        f'\n[[models]]\nname = "{m}"\ninput_usd_per_mtok = 3.0\noutput_usd_per_mtok = 15.0\n' for m in models
    )
    budget_lines = "\n".join(budget)
    return f'''name = "{name}"
sessions_per_model = {sessions}
parallelism = {parallelism}
runner = "fake"
{extra}
[budget]
{budget_lines}

[runners.fake]
kind = "fake"
cost_usd = {cost}
latency_s = {latency}
call_log = "calls.jsonl"
{extra_runners}
{model_tables}
[environment]
path = "{env_path}"
'''


def write_campaign(tmp: Path, **kw: Any) -> Path:
    (tmp / "target").mkdir(exist_ok=True)
    (tmp / "target" / "README").write_text("a stand-in target\n")
    path = tmp / f"{kw.get('name', 't')}.toml"
    path.write_text(campaign_toml(**kw))
    return path


def benchtui(
    *args: str | Path,
    cwd: Path,
    timeout: float = 60,
    env: dict | None = None,
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "benchtui", *map(str, args)],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
    )


def popen(*args: str | Path, cwd: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "benchtui", *map(str, args)],
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


async def start(prep: Any, nursery: Any, recorder: Recorder | None = None) -> tuple[Any, dict[str, bool]]:
    """Open `prep` and run it in `nursery`; returns its scheduler (for control calls) and a dict
    that gets `finished` when the campaign ends."""
    import trio

    from benchtui.engine import events as ev
    from benchtui.engine import run as engine

    bus = ev.EventBus()
    if recorder is not None:
        bus.subscribe(recorder)
    result: dict[str, bool] = {}

    async def go(task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
        async with engine.open_run(prep, bus) as run:
            if recorder is not None:
                recorder.scheduler = run.scheduler
            task_status.started(run.scheduler)
            result["finished"] = await run.until_done()

    return await nursery.start(go), result


class Recorder:
    """Every event of a run, and the scheduler (for control calls)."""

    def __init__(self) -> None:
        import trio

        self.events: list[Any] = []
        self.scheduler: Any = None
        self._changed = trio.Event()

    def __call__(self, event: Any) -> None:
        import trio

        self.events.append(event)
        self._changed.set()
        self._changed = trio.Event()

    async def until(self, predicate: Any) -> None:
        """Wait (no polling) until `predicate()` holds; it is re-checked after every event."""
        while not predicate():
            await self._changed.wait()

    def of(self, kind: type) -> list[Any]:
        return [e for e in self.events if isinstance(e, kind)]


def journal(run_dir: Path) -> list[dict[str, Any]]:
    """The journal's session lines (its other kinds, holds and details, left out)."""
    lines = (run_dir / "sessions.jsonl").read_text().split("\n")
    records = [json.loads(line) for line in lines[:-1]]  # the last piece is "" or a torn line
    return [rec for rec in records if "state" in rec]


def last_states(run_dir: Path) -> dict[str, dict[str, Any]]:
    return {rec["session"]: rec for rec in journal(run_dir)}


def ledger(run_dir: Path) -> dict[str, Any]:
    return tomllib.loads((run_dir / "ledger.toml").read_text())


def calls(run_dir: Path) -> list[str]:
    path = run_dir / "calls.jsonl"
    if not path.exists():
        return []
    return [json.loads(line)["session"] for line in path.read_text().splitlines() if line.endswith("}")]


def money(x: float) -> Decimal:
    return Decimal(repr(x))


def check_accounts(run_dir: Path) -> None:
    """Totals equal the sum of done sessions plus wasted; no cap exceeded; nothing in flight."""
    doc = ledger(run_dir)
    last = last_states(run_dir)
    done = sum((money(r["cost_usd"]) for r in last.values() if r["state"] == "done"), Decimal(0))
    totals = doc["totals"]
    assert money(totals["spent_usd"]) == done + money(totals["wasted_usd"])
    if doc["enforce"]:
        assert money(totals["spent_usd"]) <= money(totals["budget_usd"])
        for m in doc["models"].values():
            assert money(m["spent_usd"]) <= money(m["cap_usd"])


def check_caps_on_disk(run_dir: Path) -> None:
    """What must hold at every instant, even mid-crash: the ledger parses, no cap is exceeded."""
    doc = ledger(run_dir)
    totals = doc["totals"]
    assert money(totals["spent_usd"]) <= money(totals["budget_usd"])
    for m in doc["models"].values():
        assert money(m["spent_usd"]) <= money(m["cap_usd"])


def check_reconciled(campaign: Path, state_dir: Path) -> None:
    """What --resume rebuilds from the files a crash left: accounts equal to done + wasted."""
    from benchtui.engine import run as engine

    with engine.prepare(engine.Options(campaign, state_dir, resume=True)) as prep:
        book = prep.checkpoint.ledger
        journal = prep.checkpoint.journal
        done = sum((r.cost_usd for r in journal.values() if r.state == "done"), Decimal(0))
        assert book.spent == done + book.wasted
        assert book.spent <= book.budget
        assert all(m.spent_usd <= m.cap_usd for m in book.models.values())
        assert not book.running


def assert_one_line_error(done, phrase: str) -> None:
    assert done.returncode == 2, done
    assert "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert phrase in lines[0], lines[0]
