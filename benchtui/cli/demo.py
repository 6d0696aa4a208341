"""`benchtui demo`: a real campaign with no key and no network, to see the real path first.

It runs the real mini-swe-agent runner (the real agent loop, litellm, a pre-warmed worker, the
bubblewrap sandbox where `bwrap` is available) against a scripted OpenAI-compatible model server
that benchtui ships (`benchtui.runners.mini.scripted`) and starts on 127.0.0.1. Each scripted
session explores a small target with real commands (`ls`, `cat`, `pred`), then submits.

Verification: with a real `pred` on PATH the demo uses it; without one it puts a tiny stand-in
`pred` in the demo folder that answers `--version` and `list` only, so the demo's sessions never
claim a bug and nothing needs verifying (a certificate would be judged inconclusive).

Everything it writes is under the state dir (`runs/.demo/` by default), so a checkout it runs in
stays clean (`runs/` is ignored by git).
"""

from __future__ import annotations

import importlib.util
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import tomli_w

from benchtui.cli.args import OneLineParser, add_state_dir
from benchtui.core.errors import BadInput
from benchtui.engine import rundir

if TYPE_CHECKING:
    from benchtui.cli.stopsignals import StopSignals
    from benchtui.runners.mini.scripted import Reply, Request

KEY_VARIABLE = "BENCHTUI_DEMO_KEY"
"""The scripted server takes any key; the demo sets this one (it is no secret)."""
MODELS = {"openai/demo-careful": 6, "openai/demo-quick": 3}
"""Model name -> commands each session runs before it submits."""
STEPS = (
    "ls -la",
    "cat README.md",
    "pred --version",
    "pred list | head -5",
    "grep -rn 'fn reduce' src | head -3",
    "wc -l src/rules/*.rs",
)
STAND_IN_PRED = """#!/bin/sh
# benchtui demo's stand-in for problem-reductions' `pred`: it verifies nothing.
case "$1" in
  --version) echo "pred 0.0.0 (benchtui demo stand-in: install the real pred to verify)" ;;
  --help|help) echo "usage: pred list | pred --version   (benchtui demo stand-in)" ;;
  list) echo "MaximumIndependentSet -> MinimumVertexCover   (demo stand-in)" ;;
  *) echo "pred (benchtui demo stand-in): '$*' needs the real pred" >&2; exit 2 ;;
esac
"""
INSTALL_MINI = "pip install 'benchtui[mini]'"
DEMO_FOLDER = ".demo"
"""The demo's files (campaign, target, stand-in pred, its run dirs) go here in the state dir:
nothing lands in the user's checkout beside it, and a hidden name never clashes with a run."""


def parser() -> OneLineParser:
    p = OneLineParser(
        prog="benchtui demo",
        description="A real campaign with no API key: the mini-swe-agent runner (real agent loop, "
        "bubblewrap) against a scripted model server benchtui starts on 127.0.0.1.",
    )
    p.add_argument("--no-ui", action="store_true", help="headless: log lines instead of the TUI")
    p.add_argument(
        "--dir",
        type=Path,
        default=None,
        help=f"where the demo's files go (default: {DEMO_FOLDER} in the state dir, e.g. runs/{DEMO_FOLDER})",
    )
    add_state_dir(p)
    p.add_argument("--sessions", type=int, default=3, metavar="N", help="sessions per model (default 3)")
    p.add_argument("--delay", type=float, default=0.6, metavar="S", help="seconds each scripted answer takes")
    return p


def mini_installed() -> bool:
    return all(importlib.util.find_spec(m) is not None for m in ("minisweagent", "litellm"))


def main_demo(argv: list[str], stops: StopSignals, run: Callable[[list[str], StopSignals], int]) -> int:
    """`run` is `benchtui CAMPAIGN`'s own entry (cli.main.main_run), run on the demo's campaign."""
    args = parser().parse_args(argv)
    if not 1 <= args.sessions <= 100 or not 0 <= args.delay <= 60:
        raise BadInput("demo: --sessions takes 1 to 100, --delay 0 to 60 seconds")
    if not mini_installed():
        raise BadInput(f"benchtui demo runs the mini-swe-agent runner: install it with {INSTALL_MINI}")
    from benchtui.runners.mini.scripted import ScriptedLLM

    folder = (args.dir or rundir.state_dir(args.state_dir) / DEMO_FOLDER).resolve()
    with ScriptedLLM(script=lambda request: answer(request, args.delay)) as llm:
        campaign = write_demo(folder, llm.url, args.sessions)
        os.environ.setdefault(KEY_VARIABLE, "demo-key-not-a-secret")
        print(f"demo: a scripted model server on {llm.url}; campaign {campaign}")
        run_args = [str(campaign), "--fresh", "--state-dir", str(folder / "runs")]
        return run([*run_args, *(["--no-ui"] if args.no_ui else [])], stops)


def answer(request: Request, delay: float) -> Reply:
    """The scripted model: the session's next command, then submit (per model, a fixed count)."""
    from benchtui.runners.mini.scripted import SUBMIT, Reply

    # litellm sends the name without its provider prefix ("demo-careful").
    steps = next((n for name, n in MODELS.items() if name.split("/", 1)[-1] == request.model), 3)
    command = STEPS[request.turn % len(STEPS)] if request.turn < steps else SUBMIT
    return Reply(command, prompt_tokens=1200 + 400 * request.turn, completion_tokens=60, delay_s=delay)


def write_demo(folder: Path, url: str, sessions: int) -> Path:
    """The demo's target, stand-in pred (when no real one is on PATH) and campaign file."""
    from benchtui.runners.kit.bubblewrap import bwrap_executable

    target = folder / "target"
    (target / "src" / "rules").mkdir(parents=True, exist_ok=True)
    (target / "README.md").write_text("A tiny stand-in for the problem-reductions library (benchtui demo).\n")
    (target / "src" / "rules" / "mis_mvc.rs").write_text(
        "// MaximumIndependentSet -> MinimumVertexCover\npub fn reduce() {}\n"
    )
    pred = shutil.which("pred")
    if pred is None:
        stand_in = folder / "bin" / "pred"
        stand_in.parent.mkdir(parents=True, exist_ok=True)
        stand_in.write_text(STAND_IN_PRED)
        stand_in.chmod(0o755)
        pred = str(stand_in)
    sandbox = "bubblewrap" if bwrap_executable() else "local"
    runner = {
        "kind": "mini-swe-agent",
        "environment": sandbox,
        "pred": pred,
        "step_limit": 12,
        "retries": 1,
        "retry_backoff_s": 0.2,
        "verify_timeout_s": 20,
        **({"unsandboxed": True} if sandbox == "local" else {}),
    }
    doc = {
        "name": "demo",
        "sessions_per_model": sessions,
        "parallelism": 2,
        "runner": "mini",
        "budget": {"total_usd": 0.5},
        "runners": {"mini": runner},
        "models": [
            {
                "name": name,
                "input_usd_per_mtok": 3.0,
                "output_usd_per_mtok": 15.0,
                "max_output_tokens": 500,
                "api_base": url,
                "api_key_env": KEY_VARIABLE,
            }
            for name in MODELS
        ],
        "environment": {"path": str(target)},
    }
    path = folder / "demo.toml"
    path.write_text(
        "# Written by `benchtui demo` (its scripted model server's address changes each run).\n"
        + tomli_w.dumps(doc)
    )
    return path
