"""The per-model table the run closes with (and `ctl status` shows) fits an 80-column terminal:
the model column gives way, a cut name ends in `…` (it was 81 columns at its narrowest)."""

from __future__ import annotations

from decimal import Decimal

from benchtui.cli.headless import summary_table
from benchtui.engine import events as ev
from benchtui.engine.account import ModelAccount


def accounts(*names: str) -> ev.AccountsCommitted:
    models = tuple(
        ModelAccount(
            name, Decimal("1000"), spent_usd=Decimal("123.4567"), wasted_usd=Decimal("0.03"), done=12345
        )
        for name in names
    )
    return ev.AccountsCommitted(
        budget_usd=Decimal("99999"), spent_usd=Decimal("246.9134"), reserved_usd=Decimal(0),
        wasted_usd=Decimal("0.06"), models=models,
    )  # fmt: skip


def test_the_closing_table_fits_80_columns_and_marks_a_cut_name():
    long = "openrouter/some-vendor/a-model-with-a-very-long-name-v2"
    lines = summary_table(accounts(long, "openai/gpt-x")).splitlines()
    assert max(map(len, lines)) <= 80, [len(line) for line in lines]
    cut = lines[2].split()[0]
    assert cut.endswith("…") and long.startswith(cut[:-1]) and lines[3].startswith("openai/gpt-x ")
    assert lines[-1].split() == ["wasted", "$0.0600"]
