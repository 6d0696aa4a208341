"""`benchtui demo`: the real mini-swe-agent runner (real agent loop, litellm, bubblewrap when
available) against the scripted model server benchtui ships, with no key; without the `[mini]`
extra it says how to install it."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from support import benchtui
from support.checkout import BENCHTUI, fresh_checkout, git_status

from benchtui.cli.demo import MODELS, STAND_IN_PRED
from benchtui.runners.kit.bubblewrap import bwrap_executable


def test_the_demo_runs_real_sessions_against_the_shipped_scripted_server_with_no_key(tmp_path):
    env = {"OPENAI_API_KEY": "", "ANTHROPIC_API_KEY": ""}
    done = benchtui(
        "demo",
        "--no-ui",
        "--dir",
        tmp_path / "d",
        "--sessions",
        "1",
        "--delay",
        "0",
        cwd=tmp_path,
        env=env,
        timeout=240,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "demo: a scripted model server on http://127.0.0.1:" in done.stdout
    run_dir = tmp_path / "d" / "runs" / "demo"
    lines = (run_dir / "sessions.jsonl").read_text().splitlines()
    ends = [r for r in map(json.loads, lines) if "state" in r]  # session lines (not holds, details)
    finals = {r["model"]: r for r in ends if r["state"] != "running"}
    assert set(finals) == set(MODELS)
    assert all(r["state"] == "done" and r["result"] == "no_certificate" for r in finals.values())
    # Real commands ran in the real agent loop: their output is in the trajectory, and each
    # model made as many calls as its script has commands, plus the submit.
    for model, steps in MODELS.items():
        assert finals[model]["calls"] == steps + 1
    traj = next((run_dir / "sessions").glob("openai_demo-careful-0000/attempt-1.traj.json")).read_text()
    assert "pred " in traj and "README.md" in traj
    campaign = (tmp_path / "d" / "demo.toml").read_text()
    assert ('environment = "bubblewrap"' in campaign) == (bwrap_executable() is not None)
    assert (run_dir / "results").is_dir()


def test_the_stand_in_pred_says_it_verifies_nothing(tmp_path):
    pred = tmp_path / "pred"
    pred.write_text(STAND_IN_PRED)
    pred.chmod(0o755)
    version = subprocess.run([pred, "--version"], capture_output=True, text=True, check=True)
    assert "stand-in" in version.stdout
    reduce = subprocess.run([pred, "reduce", "x.json"], capture_output=True, text=True)
    assert reduce.returncode == 2 and "needs the real pred" in reduce.stderr


def test_without_the_mini_extra_the_demo_says_how_to_install_it(tmp_path):
    code = (
        "import sys; sys.modules['minisweagent'] = None; "
        "from benchtui.cli.main import main; sys.exit(main(['demo', '--no-ui', '--dir', 'd']))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 2
    assert done.stderr.strip() == (
        "benchtui: benchtui demo runs the mini-swe-agent runner: install it with pip install 'benchtui[mini]'"
    )
    assert not (tmp_path / "d").exists()


def test_the_demo_writes_only_under_the_state_dir_and_leaves_a_checkout_clean(tmp_path):
    """Run as a newcomer does, in a fresh checkout: `git status` shows nothing new afterwards,
    and the demo's files and run are under `runs/.demo/` (runs/ is ignored)."""
    checkout = fresh_checkout(tmp_path / "benchtui")
    before = {p.name for p in checkout.iterdir()}
    env = {**os.environ, "OPENAI_API_KEY": "", "BENCHTUI_STATE_DIR": ""}  # empty: the default, runs/
    done = subprocess.run(
        [BENCHTUI, "demo", "--no-ui", "--sessions", "1", "--delay", "0"],
        cwd=checkout,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert git_status(checkout) == ""
    assert {p.name for p in checkout.iterdir()} - before == {"runs"}
    assert (checkout / "runs" / ".demo" / "runs" / "demo" / "sessions.jsonl").is_file()
