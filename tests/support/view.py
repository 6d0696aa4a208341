"""The viewer under test: a finished mini-swe-agent run to look at, the real `benchtui view`
served in a child process, and the system's headless Chromium driven through Playwright."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from support.real_parts import require, require_tools

CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
SESSION = "openai_scripted-a-0000"
"""The one session of `finished_mini_run`."""


def finished_mini_run(root: Path) -> Path:
    """A real mini-swe-agent session (bubblewrap, the scripted model, the stand-in pred) that
    submits a malformed certificate (REJECTED), then the planted bug (ACCEPTED, found by brute force)."""
    import trio

    from support.mini import pred_on_path, run_campaign, write_campaign
    from support.scripted_llm import Reply, ScriptedLLM

    certificate = (
        'printf \'{"rule": "MaximumIndependentSetToMinimumVertexCover", "violation": "suboptimal_extraction", '
        '"source": %s, "bundle": %s, "target_config": "0,1,0"}\' "$(cat source.json)" "$(cat bundle.json)" '
        "> cert.json && submit cert.json"
    )
    steps = [
        Reply(
            "pred --version; pred create MIS --graph 0-1,1-2 -o source.json && "
            "pred reduce source.json --to MinimumVertexCover --json > bundle.json"
        ),
        Reply("echo '{not json' > bad.json; submit bad.json"),
        Reply(certificate),
    ]
    protocol = {
        "model_calls": 10,
        "shell_actions": 12,
        "submits": 2,
        "observation_chars": 10000,
        "tools": {"pred": 24},
        "free": ["pred --version"],
    }

    saved = dict(os.environ)

    class Env:  # PATH and the key for this run only (the stand-in pred must not leak into other tests)
        def setenv(self, name: str, value: str) -> None:
            os.environ[name] = value

    try:
        os.environ["SCRIPTED_API_KEY"] = "sk-test-scripted-0000"
        pred_on_path(root, Env())
        with ScriptedLLM(steps) as llm:
            path = write_campaign(
                root, llm.url, runner={"environment": "bubblewrap"}, budget={"per_session": protocol}
            )
            prep, _ = trio.run(run_campaign, path, root / "runs")
    finally:
        os.environ.clear()
        os.environ.update(saved)
    return prep.run_dir


@contextlib.contextmanager
def served(*run_dirs: Path, cwd: Path, extra: tuple[str, ...] = ()) -> Iterator[str]:
    """`benchtui view RUN_DIR…` in a child process; yields the address it printed."""
    process = subprocess.Popen(
        [sys.executable, "-m", "benchtui", "view", *map(str, run_dirs), *extra],
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        found = re.search(r"(http://\S+/)", line)
        if not found:
            raise AssertionError(
                f"benchtui view printed no address: {line!r} {process.stderr.read() if process.stderr else ''}"
            )
        yield found.group(1)
    finally:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@contextlib.contextmanager
def browser() -> Iterator[Any]:
    """The system's headless Chromium through Playwright (never a browser Playwright downloads)."""
    require_tools("chromium")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        sync_playwright = None
    require("Playwright", sync_playwright, "pip install playwright (the [test] extra has it)")
    assert sync_playwright is not None
    with sync_playwright() as playwright:
        from benchtui.report.browser import find_chromium

        chromium = playwright.chromium.launch(executable_path=find_chromium(), args=CHROMIUM_ARGS)
        try:
            yield chromium
        finally:
            chromium.close()


def until(predicate: Any, what: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.1)
