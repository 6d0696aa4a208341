"""Helpers for the mini-swe-agent runner tests: a target, a campaign file, a whole engine run."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path
from typing import Any

import tomli_w
import trio

from benchtui.engine import events as ev
from benchtui.engine import run as engine
from support import Recorder
from support import last_states as journal  # noqa: F401 - the last record of each session
from support.scripted_llm import SUBMIT, Reply

STAND_IN_PRED = Path(__file__).with_name("stand_in_pred.py").resolve()
RULE = "MaximumIndependentSetToMinimumVertexCover"
PRICES = {"input_usd_per_mtok": 3.0, "output_usd_per_mtok": 15.0}


def make_target(root: Path) -> Path:
    """A tiny stand-in for the problem-reductions checkout (not a git repo: content-hashed)."""
    target = root / "target"
    (target / "src" / "rules").mkdir(parents=True)
    (target / "README.md").write_text("problem-reductions (test stand-in)\n")
    (target / "src" / "rules" / "maximumindependentset_minimumvertexcover.rs").write_text("// the rule\n")
    return target


def pred_on_path(tmp_path: Path, monkeypatch: Any) -> Path:
    """Put the stand-in on PATH as `pred` (the campaign's [environment] tools fingerprint it)."""
    bin_dir = tmp_path / "path-bin"
    bin_dir.mkdir()
    (bin_dir / "pred").symlink_to(STAND_IN_PRED)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    return bin_dir / "pred"


def write_campaign(
    tmp_path: Path,
    api_base: str,
    *,
    models: tuple[str, ...] = ("openai/scripted-a",),
    runner: dict[str, Any] | None = None,
    budget: dict[str, Any] | None = None,
    model: dict[str, Any] | None = None,
    **top: Any,
) -> Path:
    target = tmp_path / "target" if (tmp_path / "target").exists() else make_target(tmp_path)
    doc = {
        "name": "mini",
        "parallelism": 2,
        "runner": "mini",
        **({"tasks": [RULE]} if "sessions_per_model" not in top else {}),
        **top,
        "budget": {"total_usd": 1.0, **(budget or {})},
        "runners": {
            "mini": {
                "kind": "mini-swe-agent",
                "environment": "local",
                "step_limit": 8,
                "command_timeout_s": 30,
                "retries": 1,
                "retry_backoff_s": 0.05,
                "verify_timeout_s": 10,
                "startup_timeout_s": 60,
                **(runner or {}),
            }
            | ({"unsandboxed": True} if (runner or {}).get("environment", "local") == "local" else {})
        },
        "models": [
            {
                "name": name,
                **PRICES,
                "max_output_tokens": 1000,
                "api_base": api_base,
                "api_key_env": "SCRIPTED_API_KEY",
                **(model or {}),
            }
            for name in models
        ],
        "environment": {"path": str(target), "tools": ["pred"]},
    }
    path = tmp_path / "campaign.toml"
    path.write_text(tomli_w.dumps(doc))
    return path


async def run_campaign(
    path: Path, state_dir: Path, *, during: Callable[[Recorder], Any] | None = None, resume: bool = False
) -> tuple[engine.PreparedRun, Recorder]:
    """Prepare and run a campaign under the engine; `during(recorder)` runs alongside it."""
    prep = engine.prepare(engine.Options(path, state_dir, resume=resume))
    recorder = Recorder()
    bus = ev.EventBus()
    bus.subscribe(recorder)
    with prep:
        async with engine.open_run(prep, bus) as run, trio.open_nursery() as nursery:
            recorder.scheduler = run.scheduler
            if during is not None:
                nursery.start_soon(during, recorder)
            await run.until_done()
    return prep, recorder


def outcome_rows(run_dir: Path) -> list[dict[str, Any]]:
    rows = []
    for path in [run_dir / "outcomes.jsonl", *sorted(run_dir.glob("outcomes/*.jsonl"))]:
        if path.exists():
            rows += [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return rows


def price(input_tokens: int, output_tokens: int) -> Decimal:
    return (Decimal(input_tokens) * Decimal("3") + Decimal(output_tokens) * Decimal("15")) / Decimal(
        1_000_000
    )


#: A scripted hunt that finds the stand-in pred's planted bug (MIS -> MVC) and prints its certificate.
FIND_BUG = [
    Reply("ls && cat README.md", 1200, 40),
    Reply(
        "pred create MIS --graph 0-1,1-2 -o source.json && "
        "pred reduce source.json --to MinimumVertexCover --json > bundle.json && "
        "pred solve bundle.json --solver brute-force --json",
        1500,
        120,
    ),
    Reply(
        'printf \'CERTIFICATE_START\\n{"rule": "' + RULE + '", "violation": "suboptimal_extraction", '
        '"source": %s, "bundle": %s, "target_config": "0,1,0", "note": "vertex 0 is copied"}'
        '\\nCERTIFICATE_END\\n\' "$(cat source.json)" "$(cat bundle.json)"',
        1900,
        300,
    ),
    Reply(SUBMIT, 2300, 10),
]
