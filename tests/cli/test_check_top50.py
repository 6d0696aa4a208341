"""`benchtui check` on a campaign of the benchmark's own runner previews a run's money: its worst
case at each model's prices, derived from the benchmark's contract (508 generations at the fixed
max_tokens 8192, input growing within a phase), and the typical cost of the runs already run."""

from __future__ import annotations

import json
import subprocess
import sys
from decimal import Decimal
from pathlib import Path

import pytest
from support import submissions as S
from support import top50_stub

from benchtui.cli.main import main
from benchtui.report import top50_cost, top50_runs


def test_the_worst_case_of_a_run_follows_from_the_contract() -> None:
    worst = top50_cost.worst_case()
    assert worst.generations == 8 + 50 * 10 == 508
    assert worst.output_tokens == 508 * 8192
    step = 8192 + 10_200  # an answer and an observation more, each generation of a phase
    triage = 8 * 12_000 + step * (0 + 1 + 2 + 3 + 4 + 5 + 6 + 7)
    episode = 10 * 4_000 + step * sum(range(10))
    assert worst.input_tokens == triage + 50 * episode
    # $1 / $2 per Mtok: exact, rounded up to the nano-dollar
    assert worst.usd(Decimal(1), Decimal(2)) == Decimal(worst.input_tokens + 2 * worst.output_tokens) / 10**6


def test_the_contract_s_numbers_are_the_benchmark_s() -> None:
    checkout = S.need_checkout()
    said = subprocess.run(
        [sys.executable, "-c", "import json; from benchmark.top50_budget import benchmark_parameters as p; print(json.dumps(p()))"],
        cwd=checkout, capture_output=True, text=True, timeout=60, check=True,
    ).stdout  # fmt: skip
    contract = json.loads(said)
    assert contract["triage"]["model_generations"] == top50_cost.TRIAGE_GENERATIONS
    assert contract["episode"]["model_generations"] == top50_cost.EPISODE_GENERATIONS
    assert contract["shortlist_size"] == top50_cost.EPISODES
    assert contract["inference_parameters"]["max_tokens"] == top50_cost.MAX_TOKENS
    assert contract["inference_parameters"]["num_retries"] + 1 == top50_cost.REQUESTS_PER_GENERATION
    assert contract["observation"]["preview_chars"] < top50_cost.OBSERVATION_TOKENS


@pytest.fixture
def state_dir(tmp_path: Path) -> Path:
    top50_stub.run(tmp_path, {"vendor/model-a": {"accepted": {"1": 1}}, "vendor/model-b#1": {"episodes": 9}})
    return tmp_path / "runs"


def test_the_typical_cost_is_the_earlier_runs_usage_at_today_s_prices(state_dir: Path) -> None:
    runs = top50_cost.earlier_runs(state_dir)
    assert sorted(r.model for r in runs) == ["vendor/model-a"] * 2 + ["vendor/model-b"]  # finished only
    # a run of the stand-in: triage 2,000 in / 200 out, 50 episodes of 1,000 / 100
    seen = top50_cost.typical(runs, "vendor/model-a", Decimal(1), Decimal(2))
    assert seen == top50_cost.Typical(2, Decimal("0.0624"), Decimal("0.0624"))
    assert top50_cost.typical(runs, "vendor/model-c", Decimal(1), Decimal(2)) is None


def test_an_unreadable_earlier_run_is_passed_over(state_dir: Path) -> None:
    broken = next(state_dir.glob("*/sessions/*/attempt-1.submission.json"))
    broken.write_bytes(b"{torn")
    assert len(top50_cost.earlier_runs(state_dir)) == 0  # that run dir is passed over whole
    assert top50_cost.earlier_runs(state_dir / "nowhere") == []


def test_check_prints_the_preview_for_a_top50_campaign(
    state_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(top50_runs, "KINDS", frozenset({"top50", "support.top50_stub:SubmissionRunner"}))
    campaign = top50_stub.campaign(tmp_path, {}, name="next")
    main(["check", str(campaign), "--state-dir", str(state_dir)])
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if x.startswith("vendor/model-a") and "median" in x)
    assert "$52.3160" in line and "$0.0624 (median of 2, highest $0.0624)" in line
    assert "per_session_usd $0.0100 is below its worst case" in out
    assert "508 generations" in out and "assumed:" in out


def test_check_of_another_campaign_says_nothing_of_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from support.report import scripted_toml

    (tmp_path / "target").mkdir()
    (tmp_path / "c.toml").write_text(scripted_toml())
    main(["check", str(tmp_path / "c.toml")])
    assert "a Top50 run" not in capsys.readouterr().out
