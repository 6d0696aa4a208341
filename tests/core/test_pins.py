"""A run is labelled rankable only with the runner's flag AND the round's published pins; every
other run is a local variant named by its library commit and pred version."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from support import submissions as S

from benchtui.core import pins, submission
from benchtui.core.errors import BadInput


def read(**kw: object) -> submission.Submission:
    return submission.parse(S.dumps(S.build(**kw)))  # type: ignore[arg-type]


def test_the_published_pins_and_the_runner_s_flag_make_a_rankable_run() -> None:
    assert pins.label(read()) == "rankable"
    assert pins.why_not(read()) == []


def test_other_pins_make_a_local_variant_even_when_the_runner_says_rankable() -> None:
    measured = read(library_commit="8df8ac04" + "0" * 32, pred_version="0.5.0")
    assert measured.rankable  # the runner's flag is structural: it never looked at the pins
    assert pins.label(measured) == f"local:8df8ac04{'0' * 32}/0.5.0"
    assert pins.short(pins.label(measured)) == "local:8df8ac04/0.5.0"
    assert len(pins.why_not(measured)) == 2


def test_a_run_the_runner_does_not_certify_is_local_at_the_published_pins() -> None:
    stub = read(rankable=False)
    assert pins.label(stub) == f"local:{S.PUBLISHED_COMMIT}/0.6.0"
    assert pins.why_not(stub)[0].startswith("the runner did not certify it")


def test_another_prompt_makes_a_local_variant() -> None:
    edited = read(prompt="e" * 64)  # a checkout whose agent_config.yaml was edited
    assert pins.label(edited) == f"local:{S.PUBLISHED_COMMIT}/0.6.0"
    assert pins.why_not(edited) == [
        f"prompt id {'e' * 12} is not the round's frozen prompt {S.PUBLISHED_PROMPT[:12]}"
    ]


def test_a_cut_off_run_is_never_rankable() -> None:
    assert pins.label(read(episodes=9)).startswith("local:")


def test_an_unknown_round_is_refused_in_one_line(tmp_path: Path) -> None:
    (tmp_path / "VERSION").write_text("v9.9.9\n")
    with pytest.raises(BadInput, match=r"round 'v9.9.9' is unknown to this benchtui \(it knows v0.6.0\)"):
        pins.of_checkout(tmp_path)
    with pytest.raises(BadInput, match="no VERSION"):
        pins.of_checkout(tmp_path / "nowhere")


def test_an_image_s_baked_pins_win(tmp_path: Path) -> None:
    (tmp_path / "VERSION").write_text("v9.9.9\n")
    (tmp_path / "benchmark").mkdir()
    (tmp_path / "benchmark" / "PINNED_COMMIT").write_text("b" * 40 + "\n")
    (tmp_path / "benchmark" / "PINNED_VERSION").write_text("0.7.0\n")
    assert pins.of_checkout(tmp_path) == pins.Pins("b" * 40, "0.7.0", "v9.9.9", "")


def test_the_recorded_round_is_what_the_benchmark_s_checkout_publishes() -> None:
    """The pins recorded here equal what the checkout's own code resolves (env_setup, no baked
    files, no override), its VERSION and its Dockerfile's PR_REF."""
    checkout = S.need_checkout()
    env = {k: v for k, v in os.environ.items() if k not in ("EXPECTED_PRED_COMMIT", "EXPECTED_PRED_VERSION")}
    said = subprocess.run(
        [
            sys.executable,
            "-c",
            "from benchmark import env_setup as e; print(e.pinned_commit(), e.pinned_pred_version())",
        ],
        cwd=checkout,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout.split()
    published = pins.of_checkout(checkout)
    assert said == [published.library_commit, published.pred_version]
    prompt = subprocess.run(
        [sys.executable, "-c", "from benchmark.top50_contract import expected_prompt_id as p; print(p())"],
        cwd=checkout, env=env, capture_output=True, text=True, timeout=60, check=True,
    ).stdout.strip()  # fmt: skip
    assert prompt == published.prompt_id == pins.CURRENT.prompt_id == S.PUBLISHED_PROMPT
    assert pins.of_checkout(checkout) == pins.CURRENT
    dockerfile = (checkout / "docker" / "Dockerfile").read_text()
    found = re.search(r"^ARG PR_REF=(\S+)$", dockerfile, re.M)
    assert found and found.group(1) == published.round == pins.CURRENT.round
