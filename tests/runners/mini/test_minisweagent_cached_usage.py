"""Cached prompt tokens are charged at the cache prices, exactly, and never below the truth.

Each usage shape an OpenAI-compatible server (OpenAI, llama.cpp, vLLM, DeepSeek, a LiteLLM proxy
relaying Anthropic) may answer with, through litellm: the ledger equals Σ bucket tokens × bucket
price, the end line says the buckets. A usage that contradicts itself is charged its worst case.
"""

from __future__ import annotations

import json
import tomllib
from decimal import Decimal

import pytest
import trio
from support.mini import journal, outcome_rows, pred_on_path, run_campaign, write_campaign
from support.scripted_llm import SUBMIT, Reply, ScriptedLLM

from benchtui.cli.main import main as cli
from benchtui.story import evidence as story

PRICES = {
    "input_usd_per_mtok": 3.0,
    "output_usd_per_mtok": 15.0,
    "cache_read_usd_per_mtok": 0.3,
    "cache_write_usd_per_mtok": 3.75,
}
# task -> (the usage the server sends, its buckets: input, cache_read, cache_write, output, reasoning)
SHAPES = {
    "openai": (
        {
            "prompt_tokens": 2000,
            "completion_tokens": 300,
            "prompt_tokens_details": {"cached_tokens": 1536},
            "completion_tokens_details": {"reasoning_tokens": 200},
        },
        (464, 1536, 0, 300, 200),
    ),
    "llamacpp": (  # llama.cpp: cached_tokens on every answer, no completion details
        {"prompt_tokens": 900, "completion_tokens": 40, "prompt_tokens_details": {"cached_tokens": 850}},
        (50, 850, 0, 40, 0),
    ),
    "deepseek": (
        {
            "prompt_tokens": 1000,
            "completion_tokens": 10,
            "prompt_cache_hit_tokens": 700,
            "prompt_cache_miss_tokens": 300,
        },
        (300, 700, 0, 10, 0),
    ),
    "anthropic-via-proxy": (  # a LiteLLM proxy's normalised Anthropic usage: prompt includes both
        {
            "prompt_tokens": 5000,
            "completion_tokens": 100,
            "cache_read_input_tokens": 3000,
            "cache_creation_input_tokens": 1500,
        },
        (500, 3000, 1500, 100, 0),
    ),
}
SUBMIT_CALL = (100, 0, 0, 20, 0)  # the submit's answer: the scripted 100 + 20, uncached


def cost(input: int, cache_read: int, cache_write: int, output: int, reasoning: int = 0) -> Decimal:
    """Σ bucket tokens × bucket price, exactly (each term a whole number of nano-dollars here)."""
    return (
        Decimal(input) * Decimal("3")
        + Decimal(cache_read) * Decimal("0.3")
        + Decimal(cache_write) * Decimal("3.75")
        + Decimal(output) * Decimal("15")
    ) / Decimal(1_000_000)


@pytest.fixture(autouse=True)
def _env(tmp_path, monkeypatch):
    pred_on_path(tmp_path, monkeypatch)
    monkeypatch.setenv("SCRIPTED_API_KEY", "sk-test-scripted-0000")


def _script(shapes):
    def script(request):
        task = next(t for t in shapes if request.mentions(f"`{t}`"))
        return Reply("ls", usage=shapes[task][0]) if request.turn == 0 else Reply(SUBMIT)

    return script


@pytest.mark.trio
async def test_the_ledger_is_every_bucket_at_its_price_exactly(tmp_path):
    with ScriptedLLM(script=_script(SHAPES)) as llm:
        path = write_campaign(tmp_path, llm.url, tasks=list(SHAPES), parallelism=4, model=PRICES)
        with trio.fail_after(90):
            prep, _ = await run_campaign(path, tmp_path / "runs")
    records = {r["task"]: r for r in journal(prep.run_dir).values()}
    total = Decimal(0)
    for task, (_, buckets) in SHAPES.items():
        record = records[task]
        expected = cost(*buckets) + cost(*SUBMIT_CALL)
        assert record["state"] == "done", record
        assert Decimal(repr(record["cost_usd"])) == expected, task
        want = {
            k: a + b
            for k, a, b in zip(
                ("input", "cache_read", "cache_write", "output", "reasoning"),
                buckets,
                SUBMIT_CALL,
                strict=True,
            )
        }
        assert record["usage"] == want, task
        assert record["tokens"] == sum(buckets[:4]) + sum(SUBMIT_CALL[:4])
        total += expected
    # What the viewer and the TUI show of each call: its cached and reasoning tokens apart.
    steps = story.read(prep.run_dir, records["openai"]["session"], 1)
    assert steps is not None
    first = steps.generations[0]
    assert (first.input_tokens, first.cache_read_tokens, first.reasoning_tokens) == (464, 1536, 200)
    assert first.cache_note == " (1,536 cached; 200 reasoning)"
    (results,) = (prep.run_dir / "results").glob("*.json")
    rows = {row["session"]: row for row in json.loads(results.read_text())["results"]}
    assert rows[records["openai"]["session"]]["usage"] == records["openai"]["usage"]
    ledger = tomllib.loads((prep.run_dir / "ledger.toml").read_text())
    assert Decimal(repr(ledger["totals"]["spent_usd"])) == total
    assert ledger["models"]["openai/scripted-a"]["tokens"]["cache_read"] == 1536 + 850 + 700 + 3000


HOSTILE = {  # served answers whose usage cannot be believed: each is charged its worst case
    "more-cached-than-prompt": {"prompt_tokens": 100, "completion_tokens": 20, "prompt_tokens_details": {"cached_tokens": 5000}},
    "more-reasoning-than-output": {"prompt_tokens": 100, "completion_tokens": 20, "completion_tokens_details": {"reasoning_tokens": 900}},
    "negative-cached": {"prompt_tokens": 100, "completion_tokens": 20, "prompt_tokens_details": {"cached_tokens": -80}},
    "absurd": {"prompt_tokens": 10**15, "completion_tokens": 20},
}  # fmt: skip
# (A count sent as text, "90", litellm's pydantic usage reads as the number: the gateway, reading
# the provider's JSON itself, charges it the worst case: tests/runners/test_gateway_cached_usage.py.)


@pytest.mark.trio
async def test_a_usage_that_contradicts_itself_is_charged_its_worst_case_never_less(tmp_path):
    shapes = {task: (usage, None) for task, usage in HOSTILE.items()}
    with ScriptedLLM(script=_script(shapes)) as llm:
        path = write_campaign(tmp_path, llm.url, tasks=list(HOSTILE), parallelism=5, model=PRICES)
        with trio.fail_after(90):
            prep, _ = await run_campaign(path, tmp_path / "runs")
    records = {r["task"]: r for r in journal(prep.run_dir).values()}
    details = {row["session"]: row for row in outcome_rows(prep.run_dir)}
    for task in HOSTILE:
        record = records[task]
        assert record["state"] == "done", record
        reasons = details[record["session"]].get("worst_case_reasons", [])
        assert len(reasons) == 1, (task, reasons)
        # The worst case: the counted prompt at the dearest prompt price ($3.75) + 1000 output tokens.
        assert Decimal(repr(record["cost_usd"])) > cost(0, 0, 0, 1000) + cost(*SUBMIT_CALL), task


@pytest.mark.trio
async def test_the_providers_own_cost_is_recorded_beside_ours_never_charged(tmp_path):
    ours = cost(464, 1536, 0, 300)
    theirs = {  # OpenRouter's usage.cost: a number; a proxy may send a string; nonsense is dropped
        "number": float(ours * Decimal("1.05")),
        "string": str(ours),
        "nonsense": "free!",
        "negative": -1.0,
    }
    shapes = {task: ({**SHAPES["openai"][0], "cost": c}, None) for task, c in theirs.items()}
    with ScriptedLLM(script=_script(shapes)) as llm:
        path = write_campaign(tmp_path, llm.url, tasks=list(shapes), parallelism=4, model=PRICES)
        with trio.fail_after(90):
            prep, _ = await run_campaign(path, tmp_path / "runs")
    records = {r["task"]: r for r in journal(prep.run_dir).values()}
    for task in shapes:
        assert Decimal(repr(records[task]["cost_usd"])) == ours + cost(*SUBMIT_CALL), task  # ours, always
    assert Decimal(records["number"]["provider_cost"]["usd"]) == Decimal(repr(theirs["number"]))
    assert Decimal(records["number"]["provider_cost"]["ours_usd"]) == ours
    assert records["number"]["provider_cost"]["calls"] == 1
    assert Decimal(records["string"]["provider_cost"]["usd"]) == ours
    assert "provider_cost" not in records["nonsense"] and "provider_cost" not in records["negative"]
    # The report: a session 5% apart from its provider's cost is an audit note naming the model and the gap.
    assert cli(["report", str(prep.run_dir), "--format", "json", "-o", str(tmp_path / "r.json")]) == 0
    report = json.loads((tmp_path / "r.json").read_text())
    (note,) = [n for n in report["fairness"]["notes"] if n.startswith("provider cost: ")]
    assert note.startswith("provider cost: openai/scripted-a: 1 session(s) differ by more than 1%"), note
    assert "+5.0%" in note and records["number"]["session"] in note, note
    (model,) = report["models"]
    assert model["usage"]["cache_read"] == 4 * 1536 and model["usage"]["reasoning"] == 4 * 200
    assert cli(["report", str(prep.run_dir), "-o", str(tmp_path / "r.txt")]) == 0
    text = (tmp_path / "r.txt").read_text()
    assert "Tokens by bucket" in text and f"cache read {4 * 1536:,}" in text
    assert "cache read $0.3 / write $3.75" in text
    assert cli(["report", str(prep.run_dir), "--public", "-o", str(tmp_path / "board.json")]) == 0
    (row,) = json.loads((tmp_path / "board.json").read_text())["models"]
    assert row["tokens_by_bucket"]["cache_read"] == 4 * 1536


@pytest.mark.trio
async def test_cache_prices_make_the_same_cap_last_longer(tmp_path):
    """A session re-sends its conversation, mostly cached: at the cache price it affords more calls."""
    usage = {"prompt_tokens": 4000, "completion_tokens": 50, "prompt_tokens_details": {"cached_tokens": 3800}}
    calls = {}
    for label, prices in (("full price", {}), ("cache prices", {"cache_read_usd_per_mtok": 0.3})):
        root = tmp_path / label.replace(" ", "-")
        root.mkdir()
        pred_on_path(root, pytest.MonkeyPatch())
        with ScriptedLLM(script=lambda request: Reply("ls", usage=usage)) as llm:
            path = write_campaign(
                root,
                llm.url,
                tasks=["hunt"],
                model={"input_usd_per_mtok": 3.0, "output_usd_per_mtok": 15.0, **prices},
                budget={"total_usd": 0.1},
                runner={"step_limit": 100},
            )
            with trio.fail_after(120):
                prep, _ = await run_campaign(path, root / "runs")
        (record,) = journal(prep.run_dir).values()
        calls[label] = record["calls"]
        assert Decimal(repr(record["cost_usd"])) <= Decimal("0.1")
    assert calls["cache prices"] > 2 * calls["full price"] > 0, calls
