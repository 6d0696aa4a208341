"""F3/F4/F5: full reservations, equal shares, round-robin order, a hard cap at any parallelism."""

from __future__ import annotations

from collections import Counter
from decimal import Decimal

import pytest
from support import benchtui, check_accounts, journal, last_states, ledger, money, write_campaign


@pytest.mark.parametrize("parallelism", [1, 16])
def test_fair_campaign_stays_within_budget_and_is_even(tmp_path, parallelism):
    write_campaign(tmp_path, sessions=5, parallelism=parallelism, latency=0.01)
    done = benchtui("t.toml", "--no-ui", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    run = tmp_path / "runs/t"
    doc = ledger(run)
    assert money(doc["totals"]["spent_usd"]) <= Decimal("0.20")
    for name, account in doc["models"].items():
        assert money(account["spent_usd"]) <= money(account["cap_usd"]) == Decimal("0.1")
        assert (account["sessions_done"], account["sessions_skipped"]) == (3, 2), name
    # Every session that ran had the full per-session budget reserved.
    running = [r for r in journal(run) if r["state"] == "running"]
    assert running and all(money(r["reserved_usd"]) == Decimal("0.03") for r in running)
    states = Counter(r["state"] for r in last_states(run).values())
    assert states == {"done": 6, "skipped_budget": 4}
    check_accounts(run)


def test_launch_order_is_round_robin_by_session_index(tmp_path):
    write_campaign(
        tmp_path, sessions=3, parallelism=1, total="10", per_session="0.03", models=("m1", "m2", "m3")
    )
    assert benchtui("t.toml", "--no-ui", cwd=tmp_path).returncode == 0
    started = [r["session"] for r in journal(tmp_path / "runs/t") if r["state"] == "running"]
    assert started == [f"{m}-{i:04d}" for i in range(3) for m in ("m1", "m2", "m3")]


def test_unenforced_budget_overspends(tmp_path):
    """The contrast: with enforce = false nothing is reserved or skipped."""
    write_campaign(tmp_path, sessions=5, parallelism=4, enforce=False)
    assert benchtui("t.toml", "--no-ui", cwd=tmp_path).returncode == 0
    doc = ledger(tmp_path / "runs/t")
    assert money(doc["totals"]["spent_usd"]) == Decimal("0.30") > Decimal("0.20")
    assert all(m["sessions_skipped"] == 0 for m in doc["models"].values())


@pytest.mark.parametrize("parallelism", [2, 32])
def test_cheap_sessions_wait_for_handed_back_reservations_instead_of_being_skipped(tmp_path, parallelism):
    """Sessions reserve $0.03 but spend $0.01: waiting sessions start once reservations come back."""
    write_campaign(tmp_path, sessions=12, parallelism=parallelism, cost="0.01", latency=0.02)
    assert benchtui("t.toml", "--no-ui", cwd=tmp_path).returncode == 0
    run = tmp_path / "runs/t"
    doc = ledger(run)
    # 0.10 per model at 0.01 per session: 8 sessions fit with the last 0.03 reservation ending at
    # 0.10 exactly (0.07 spent + 0.03 reserved); after that 0.08 + 0.03 > 0.10, so the rest skip.
    for account in doc["models"].values():
        assert account["sessions_done"] == 8 and account["sessions_skipped"] == 4
        assert money(account["spent_usd"]) == Decimal("0.08")
    check_accounts(run)


def test_hard_cap_under_a_parallel_race(tmp_path):
    """Many sessions in parallel racing for a total budget smaller than the sum of model caps."""
    write_campaign(
        tmp_path,
        sessions=40,
        parallelism=64,
        total="0.50",
        per_model="0.40",
        per_session="0.03",
        cost="0.029",
        latency=0.001,
        models=("a", "b", "c"),
    )
    assert benchtui("t.toml", "--no-ui", cwd=tmp_path).returncode == 0
    run = tmp_path / "runs/t"
    doc = ledger(run)
    assert money(doc["totals"]["spent_usd"]) <= Decimal("0.50")
    done = {name: m["sessions_done"] for name, m in doc["models"].items()}
    # Round-robin launch order keeps the shares within one session of each other.
    assert max(done.values()) - min(done.values()) <= 1, done
    check_accounts(run)
