"""A model the campaign gives no price is priced from litellm's offline price map, frozen.

The front end asks litellm (in a child process: the engine never imports it); the prices land in
the run's campaign copy and identity with `prices_from` naming the map, and are charged like
prices the file gives. A model the map does not know still needs its prices (one line, exit 2).
"""

from __future__ import annotations

import tomllib
from decimal import Decimal

import pytest
import tomli_w
from support.mini import journal, pred_on_path, write_campaign
from support.scripted_llm import SUBMIT, Reply, ScriptedLLM

from benchtui.cli.main import main as cli
from benchtui.engine.campaign import load

pytest.importorskip("litellm")


def unpriced(path, *models: str) -> None:
    doc = tomllib.loads(path.read_text())
    for model in doc["models"]:
        del model["input_usd_per_mtok"], model["output_usd_per_mtok"]
    path.write_text(tomli_w.dumps(doc))


@pytest.fixture(autouse=True)
def _env(tmp_path, monkeypatch):
    pred_on_path(tmp_path, monkeypatch)
    monkeypatch.setenv("SCRIPTED_API_KEY", "sk-test-scripted-0000")


def test_a_model_without_prices_is_priced_from_litellms_map_and_charged_so(tmp_path, capsys):
    usage = {
        "prompt_tokens": 2000,
        "completion_tokens": 100,
        "prompt_tokens_details": {"cached_tokens": 1000},
    }
    script = [Reply("ls", usage=usage), Reply(SUBMIT, 400, 10)]
    with ScriptedLLM(script) as llm:
        path = write_campaign(tmp_path, llm.url, models=("openai/gpt-4o-mini",))
        unpriced(path)
        state = tmp_path / "runs"
        assert cli([str(path), "--no-ui", "--state-dir", str(state)]) == 0, capsys.readouterr().err
        # Finished: the same identity (the file still gives no price; the map still has these).
        assert cli([str(path), "--no-ui", "--state-dir", str(state)]) == 0, capsys.readouterr().err
    run = state / "mini"
    frozen = tomllib.loads((run / "campaign.toml").read_text())["models"][0]
    assert frozen["prices_from"].startswith("litellm ") and frozen["prices_from"].endswith(" price map")
    per = {
        k: Decimal(repr(frozen[k]))
        for k in ("input_usd_per_mtok", "output_usd_per_mtok", "cache_read_usd_per_mtok")
    }
    assert all(v > 0 for v in per.values()), per
    assert per["cache_read_usd_per_mtok"] < per["input_usd_per_mtok"]  # the map's cache price
    # The engine's view of it: the frozen copy, read without any map.
    (model,) = load(run / "campaign.toml").models
    assert (
        model.prices_from == frozen["prices_from"] and model.input_usd_per_mtok == per["input_usd_per_mtok"]
    )
    (record,) = journal(run).values()
    i, o, c = per["input_usd_per_mtok"], per["output_usd_per_mtok"], per["cache_read_usd_per_mtok"]
    expected = (1000 * i + 1000 * c + 100 * o + 400 * i + 10 * o) / 1_000_000
    assert abs(Decimal(repr(record["cost_usd"])) - expected) <= Decimal("4e-9"), (
        record["cost_usd"],
        expected,
    )


def test_a_model_the_map_does_not_know_still_needs_its_prices(tmp_path, capsys):
    path = write_campaign(tmp_path, "http://127.0.0.1:9/v1", models=("openai/no-such-model-xyz",))
    unpriced(path)
    assert cli(["check", str(path)]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and "input_usd_per_mtok" in err[0], err
