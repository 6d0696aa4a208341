"""Ledger arithmetic, exact money, and the campaign's derived budgets and identity."""

from __future__ import annotations

import json
import tomllib
from decimal import Decimal

import pytest
from support import campaign_toml, write_campaign

from benchtui.core.money import to_float, token_cost, usd
from benchtui.engine import campaign as campaign_file
from benchtui.engine.campaign import identity_digest
from benchtui.engine.ledger import Ledger
from benchtui.engine.plan import build_plan

D = Decimal


def book(enforce: bool = True) -> Ledger:
    return Ledger(D("0.20"), {"a": D("0.10"), "b": D("0.10")}, enforce=enforce)


def test_reserve_authorise_charge_close():
    ledger = book()
    ledger.open("a-0", "a", 0, 1, "fake", D("0.03"))
    assert ledger.models["a"].reserved_usd == D("0.03")
    assert ledger.authorise("a-0", D("0.02"))
    assert not ledger.authorise("a-0", D("0.02"))  # 0.02 held + 0.02 > 0.03
    ledger.charge("a-0", D("0.015"))  # settles the hold with the real cost
    assert (ledger.models["a"].spent_usd, ledger.models["a"].reserved_usd) == (D("0.015"), D("0.015"))
    assert ledger.authorise("a-0", D("0.015"))
    assert ledger.close("a-0", "done") == D("0.03")  # the unsettled hold is charged in full
    assert (ledger.spent, ledger.reserved, ledger.wasted) == (D("0.03"), 0, 0)


def test_parallel_calls_each_settle_their_own_hold():
    ledger = book()
    ledger.open("a-0", "a", 0, 1, "fake", D("0.03"))
    assert ledger.authorise("a-0", D("0.01")) and ledger.authorise("a-0", D("0.015"))
    assert not ledger.authorise("a-0", D("0.01"))  # 0.025 held + 0.01 > 0.03
    ledger.charge("a-0", D("0.002"), settles=D("0.01"))  # the first call ends; the second is still held
    assert ledger.running["a-0"].held == D("0.015")
    assert not ledger.authorise("a-0", D("0.014"))  # 0.002 + 0.015 + 0.014 > 0.03
    assert ledger.authorise("a-0", D("0.013"))
    ledger.charge("a-0", D("0.001"))  # no `settles`: every open hold
    assert (ledger.running["a-0"].held, ledger.running["a-0"].spent) == (0, D("0.003"))


def test_spend_of_a_killed_attempt_is_wasted_and_counts():
    ledger = book()
    ledger.open("a-0", "a", 0, 1, "fake", D("0.03"))
    ledger.authorise("a-0", D("0.01"))
    ledger.close("a-0", "killed")
    assert ledger.wasted == ledger.spent == D("0.01")
    assert ledger.models["a"].killed == 1


def test_fits_now_and_may_fit_later():
    ledger = book()
    for i in range(3):
        assert ledger.fits_now("a", D("0.03"))
        ledger.open(f"a-{i}", "a", i, 1, "fake", D("0.03"))
    assert not ledger.fits_now("a", D("0.03"))  # 0.09 reserved: the model cap binds
    assert ledger.may_fit_later("a", D("0.03"))  # ...but its running sessions may hand back
    assert ledger.fits_now("b", D("0.03"))
    for i in range(3):
        ledger.charge(f"a-{i}", D("0.03"))
        ledger.close(f"a-{i}", "done")
    assert not ledger.may_fit_later("a", D("0.03"))  # 0.09 spent: it can never fit


def test_unenforced_ledger_reserves_nothing_and_refuses_nothing():
    ledger = book(enforce=False)
    flight = ledger.open("a-0", "a", 0, 1, "fake", D("0.03"))
    assert flight.reservation == 0 and ledger.authorise("a-0", D("5"))
    ledger.charge("a-0", D("5"))
    assert ledger.spent == D("5")  # never clamped


def test_money_is_exact_and_survives_toml():
    assert token_cost(1, D("0.15")) == D("1.5E-7")
    assert sum([usd(0.1)] * 3) == D("0.3")  # floats go through their repr: no 0.30000000000000004
    amounts = [D("0.000000001"), D("123456.123456789"), token_cost(12345, D("0.075"))]
    for amount in amounts:
        assert usd(tomllib.loads(f"x = {to_float(amount)!r}")["x"]) == amount


def test_ledger_toml_has_the_contract_keys():
    ledger = book()
    ledger.open("a-0", "a", 0, 1, "fake", D("0.03"))
    doc = tomllib.loads(ledger.to_toml().decode())
    assert set(doc["totals"]) >= {"budget_usd", "spent_usd", "reserved_usd", "wasted_usd"}
    assert set(doc["models"]["a"]) >= {
        "cap_usd",
        "spent_usd",
        "reserved_usd",
        "sessions_done",
        "sessions_skipped",
    }
    assert doc["running"]["a-0"]["reservation_usd"] == 0.03


def test_default_budgets_split_evenly(tmp_path):
    path = write_campaign(tmp_path, total="0.30", per_session=None, sessions=5)
    c = campaign_file.load(path)
    assert (c.per_model_usd, c.per_session_usd) == (D("0.15"), D("0.03"))


def test_equal_shares_never_add_up_past_the_whole(tmp_path):
    for models, total in ((3, "0.20"), (7, "1"), (6, "0.1")):
        names = tuple(f"m{i}" for i in range(models))
        c = campaign_file.load(
            write_campaign(tmp_path, total=total, per_session=None, sessions=3, models=names)
        )
        assert c.per_model_usd * models <= D(total) < c.per_model_usd * models + D("1e-8")
        assert c.per_session_usd * 3 <= c.per_model_usd


def test_env_overrides_with_prefix(tmp_path, monkeypatch):
    path = write_campaign(tmp_path)
    monkeypatch.setenv("BENCHTUI_PARALLELISM", "9")
    monkeypatch.setenv("BENCHTUI_BUDGET__ENFORCE", "false")
    c = campaign_file.load(path)
    assert c.parallelism == 9 and c.budget.enforce is False
    assert c.budget.total_usd == D("0.20")  # the rest of the table still comes from the file
    assert campaign_file.load(path, parallelism=3).parallelism == 3  # the CLI wins


def test_identity_ignores_parallelism_but_not_prices(tmp_path):
    def digest(**kw):
        (tmp_path / "target").mkdir(exist_ok=True)
        (tmp_path / "c.toml").write_text(campaign_toml(**kw))
        return identity_digest(campaign_file.load(tmp_path / "c.toml").identity_parts("env"))

    base = digest()
    assert digest(parallelism=17) == base
    assert digest(total="0.2000") == base  # the same number spelled differently
    assert digest(cost="0.04")["runners"] != base["runners"]
    assert digest(models=("fake/model-a", "fake/model-c"))["models"] != base["models"]


def test_zero_price_is_allowed_with_a_warning(tmp_path):
    text = campaign_toml().replace(
        "input_usd_per_mtok = 3.0\noutput_usd_per_mtok = 15.0",
        "input_usd_per_mtok = 0\noutput_usd_per_mtok = 0",
        1,
    )
    (tmp_path / "target").mkdir()
    (tmp_path / "c.toml").write_text(text)
    c = campaign_file.load(tmp_path / "c.toml")
    assert "cannot bound" in c.warnings()[0]


def test_plan_is_round_robin_with_stable_ids(tmp_path):
    path = write_campaign(tmp_path, sessions=2, models=("org/m:1", "b"))
    ids = [s.id for s in build_plan(campaign_file.load(path))]
    assert ids == ["org_m_1-0000", "b-0000", "org_m_1-0001", "b-0001"]


def test_tasks_times_repeats(tmp_path):
    text = campaign_toml().replace("sessions_per_model = 5", 'tasks = ["r1", "r2"]\nrepeats = 2')
    (tmp_path / "target").mkdir()
    (tmp_path / "c.toml").write_text(text)
    plan = build_plan(campaign_file.load(tmp_path / "c.toml"))
    assert [s.task for s in plan if s.model == "fake/model-a"] == ["r1", "r2", "r1", "r2"]


def test_colliding_model_slugs_are_rejected(tmp_path):
    path = write_campaign(tmp_path, models=("a/b", "a:b"))
    with pytest.raises(Exception, match="same file name"):
        campaign_file.load(path)


def test_the_saved_ledger_is_the_same_text_with_each_attempt_rendered_once_per_state():
    # ledger.toml's attempts are rendered once per state and reused (issue 25): the text must be
    # exactly what rendering the whole document at once gives, before and after a change.
    from dataclasses import asdict

    from benchtui.core import tomlout

    ledger = Ledger(Decimal(100), {"m/a": Decimal(60), "m/b": Decimal(40)})
    flights = [ledger.open(f"s-{n}", "m/a" if n % 2 else "m/b", n, 1, "fake", Decimal(2)) for n in range(6)]
    flights[3].counters["model_calls"] = 2

    def whole() -> bytes:
        saved = ledger.saved()
        doc = {
            "format": saved.format,
            **asdict(saved.control),
            "enforce": saved.enforce,
            "totals": tomllib.loads(saved.to_toml().decode())["totals"],
            "models": {name: m.to_toml() for name, m in saved.models.items()},
            "running": {s: f.to_toml() for s, f in saved.running.items()},
        }
        return tomlout.dumps(doc).encode()

    assert ledger.to_toml() == whole()
    flights[2].spent += Decimal("0.25")  # one attempt changes: its text must follow
    flights[3].counters["model_calls"] = 3
    assert ledger.to_toml() == whole()
    assert tomllib.loads(ledger.to_toml().decode())["running"]["s-2"]["spent_usd"] == to_float(
        flights[2].spent
    )


@pytest.mark.trio
async def test_a_charge_not_yet_written_leaves_its_hold_on_disk_and_is_written_within_soon_s(tmp_path):
    # F6/F7 with `mark_dirty_soon` (issue 25): a call's charge makes no commit of its own. Until
    # it is written, ledger.toml still holds the call's worst case (a crash charges it in full:
    # over, never under); it is written within SOON_S though nothing else commits.
    import trio

    from benchtui.engine import events as ev
    from benchtui.engine.accounts import Accounts
    from benchtui.engine.store import LEDGER, SOON_S, Store

    ledger = Ledger(Decimal(100), {"m/a": Decimal(100)})
    store = Store(tmp_path, ledger)
    accounts = Accounts(ledger, store, ev.EventBus(), {})
    flight = ledger.open("s-0", "m/a", 0, 1, "fake", Decimal(2))

    def on_disk() -> dict:
        return tomllib.loads((tmp_path / LEDGER).read_text())["running"]["s-0"]

    async with trio.open_nursery() as nursery:
        await nursery.start(store.serve)
        hold = Decimal("0.5")
        assert accounts.authorise(flight, hold)
        await accounts.commit()
        assert on_disk()["held_usd"] == 0.5
        accounts.charge(flight, Decimal("0.1"), settles=hold)
        assert on_disk()["held_usd"] == 0.5 and on_disk()["spent_usd"] == 0  # the hold stands
        with trio.fail_after(SOON_S + 2):
            while on_disk()["spent_usd"] == 0:
                await trio.sleep(0.005)
        assert on_disk()["held_usd"] == 0 and on_disk()["spent_usd"] == 0.1
        nursery.cancel_scope.cancel()


# -- one account type: the ledger's, ledger.toml's, the events' and ctl's --------------------------
def test_a_model_account_keeps_the_keys_every_release_wrote_and_round_trips_as_json():
    from dataclasses import replace

    from benchtui.engine import events as ev
    from benchtui.engine.account import ModelAccount
    from benchtui.engine.control import accounts_from_json, accounts_to_json

    account = ModelAccount(
        "m", D("0.25"), D("0.01"), D("0.03"), D("0.002"), 1, 2, 3, 4, 5, 6, tokens=7, planned=9
    )
    assert list(account.to_toml()) == [
        "cap_usd", "spent_usd", "reserved_usd", "wasted_usd", "sessions_done", "sessions_skipped",
        "sessions_error", "sessions_killed", "sessions_running", "certificates",
    ]  # fmt: skip
    assert ModelAccount.from_toml("m", account.to_toml()) == replace(account, tokens=0, planned=0)
    sent = ev.AccountsCommitted(
        budget_usd=D("1"),
        spent_usd=D("0.01"),
        reserved_usd=D("0.03"),
        wasted_usd=D("0.002"),
        models=(account,),
    )
    assert accounts_from_json(json.loads(json.dumps(accounts_to_json(sent)))) == sent  # exact: no floats
    for bad in (
        [],
        {"name": "m"},
        {"name": "m", "cap_usd": "NaN"},
        {"name": "m", "cap_usd": "lots"},
        {"name": "m", "cap_usd": "1", "done": -1},
        {"name": "m", "cap_usd": "1", "done": True},
        {"name": "m", "cap_usd": "1", "sessions_done": 1},
    ):
        with pytest.raises(ValueError):
            ModelAccount.from_json(bad)
