"""Per-provider concurrency: `max_connections` of a model and of a provider bound its sessions at
once, the others fill the free slots, the launch order stays round-robin among the models that
can start; a 429's backoff is shared by every session of the provider. In-process, on a MockClock."""

from __future__ import annotations

from collections import Counter
from decimal import Decimal

import pytest
import trio
import trio.testing
from support import Recorder, journal, last_states, start, write_campaign
from support.gateway import Durable

from benchtui.core.contract import ModelSpec
from benchtui.core.errors import BadInput
from benchtui.engine import campaign as campaign_file
from benchtui.engine import events as ev
from benchtui.engine import run as engine
from benchtui.engine.accounts import Accounts
from benchtui.engine.ledger import Ledger
from benchtui.engine.meter import SessionMeter
from benchtui.engine.providers import Backoff, provider_of
from benchtui.engine.records import Throttling

MODELS = ("a", "b", "c")


def limited(tmp_path, model_limits: dict[str, int], providers: str = "", **kw):
    """A fake campaign whose models get `max_connections` (and `api_base`s: a and b on one)."""
    path = write_campaign(tmp_path, models=MODELS, total="10", per_session="0.03", **kw)
    text = path.read_text()
    for model in MODELS:
        base = "http://127.0.0.1:9/v1" if model in "ab" else "http://127.0.0.1:8/v1"
        extra = f'api_base = "{base}"\n'
        if model in model_limits:
            extra += f"max_connections = {model_limits[model]}\n"
        text = text.replace(f'name = "{model}"\n', f'name = "{model}"\n{extra}')
    path.write_text(text + providers)
    return engine.prepare(engine.Options(path, tmp_path / "runs"))


def launched(prep: engine.PreparedRun) -> list[str]:
    """The launch order: the journal's `running` lines (events of sessions started together may
    come out in another order, after their shared commit)."""
    return [r["session"] for r in journal(prep.run_dir) if r["state"] == "running"]


def concurrency(rec: Recorder) -> tuple[Counter[str], int]:
    """The most sessions of each model (and in all) running at once."""
    running: Counter[str] = Counter()
    peak: Counter[str] = Counter()
    total = 0
    for e in rec.events:
        if isinstance(e, ev.SessionStarted):
            running[e.model] += 1
            peak[e.model] = max(peak[e.model], running[e.model])
            total = max(total, sum(running.values()))
        elif isinstance(e, ev.SessionEnded) and e.state != "skipped_budget":
            running[e.model] -= 1
    return peak, total


def next_launch_after_each_end(prep: engine.PreparedRun, model: str) -> list[tuple[str, str | None]]:
    """For each end of a `model` session: (that session, the next session launched), from the journal."""
    lines = journal(prep.run_dir)
    out = []
    for i, r in enumerate(lines):
        if r["state"] != "running" and r["model"] == model:
            later = [x["session"] for x in lines[i + 1 :] if x["state"] == "running"]
            out.append((r["session"], later[0] if later else None))
    return out


@pytest.mark.trio
async def test_a_model_at_its_limit_waits_while_the_others_fill_the_slots(tmp_path, mock_clock):
    """3 models, `a` with max_connections = 1, parallelism 6: never two of a's sessions at once,
    six running at once all the same, each model's sessions in index order, and a's next session
    is the first launched once a's running one ends (skipped for now, never starved)."""
    prep = limited(tmp_path, {"a": 1}, sessions=4, parallelism=6, latency=1)
    rec = Recorder()
    mock_clock.autojump_threshold = 0
    async with trio.open_nursery() as nursery:
        _, result = await start(prep, nursery, rec)
    assert result["finished"] is True
    peak, total = concurrency(rec)
    order = launched(prep)
    assert peak["a"] == 1
    assert total == 6 and peak["b"] > 1 and peak["c"] > 1
    # The first round is round-robin; a's second session is passed over while a0 runs.
    assert order[:6] == ["a-0000", "b-0000", "c-0000", "b-0001", "c-0001", "b-0002"]
    for model in MODELS:
        assert [s for s in order if s[0] == model] == [f"{model}-{i:04d}" for i in range(4)]
    waiting_a = [(end, nxt) for end, nxt in next_launch_after_each_end(prep, "a") if end != "a-0003"]
    assert waiting_a == [(f"a-{i:04d}", f"a-{i + 1:04d}") for i in range(3)]
    assert {r["state"] for r in last_states(prep.run_dir).values()} == {"done"}


@pytest.mark.trio
async def test_without_limits_the_order_is_plain_round_robin(tmp_path, mock_clock):
    """The guard's contrast: the same campaign with no max_connections runs a's sessions together."""
    prep = limited(tmp_path, {}, sessions=4, parallelism=6, latency=1)
    rec = Recorder()
    mock_clock.autojump_threshold = 0
    async with trio.open_nursery() as nursery:
        await start(prep, nursery, rec)
    peak, _ = concurrency(rec)
    order = launched(prep)
    # Unbounded, a runs several at once: 2 from the first round, 3 when a slot of b or c frees
    # before a's own (equal latencies end in whatever order their tasks resume): not a limit.
    assert peak["a"] >= 2
    assert order == [f"{m}-{i:04d}" for i in range(4) for m in MODELS]


@pytest.mark.trio
async def test_a_provider_limit_holds_across_its_models(tmp_path, mock_clock):
    """`[providers."<api_base>"] max_connections = 2`: a and b share that api_base, so at most two
    of their sessions run at once in all; c (elsewhere) is not held back by them."""
    providers = '\n[providers."http://127.0.0.1:9/v1"]\nmax_connections = 2\n'
    prep = limited(tmp_path, {}, providers, sessions=3, parallelism=6, latency=1)
    rec = Recorder()
    mock_clock.autojump_threshold = 0
    async with trio.open_nursery() as nursery:
        _, result = await start(prep, nursery, rec)
    assert result["finished"] is True
    running: Counter[str] = Counter()
    shared = []
    for e in rec.events:
        if isinstance(e, ev.SessionStarted):
            running[e.model] += 1
        elif isinstance(e, ev.SessionEnded) and e.state != "skipped_budget":
            running[e.model] -= 1
        shared.append(running["a"] + running["b"])
    assert max(shared) == 2
    peak, _ = concurrency(rec)
    order = launched(prep)
    assert peak["c"] == 3  # all of c's sessions at once: its provider has no limit
    assert order[:4] == ["a-0000", "b-0000", "c-0000", "c-0001"]


@pytest.mark.trio
async def test_raising_parallelism_wakes_a_launch_waiting_for_a_slot(tmp_path, mock_clock):
    prep = limited(tmp_path, {"a": 1}, sessions=2, parallelism=1, latency=10)
    rec = Recorder()
    async with trio.open_nursery() as nursery:
        scheduler, result = await start(prep, nursery, rec)
        await rec.until(lambda: len(rec.of(ev.SessionStarted)) == 1)
        await trio.testing.wait_all_tasks_blocked()
        scheduler.set_parallelism(3)
        await rec.until(lambda: len(rec.of(ev.SessionStarted)) == 3)  # b0, c0: a is at its limit
        assert launched(prep) == ["a-0000", "b-0000", "c-0000"]
        mock_clock.autojump_threshold = 0
    assert result["finished"] is True


def test_max_connections_and_providers_are_outside_the_identity(tmp_path):
    """Free to change on resume, like parallelism: the same identity with and without them."""
    (tmp_path / "p").mkdir()
    (tmp_path / "c").mkdir()
    plain = limited(tmp_path / "p", {})
    with plain:
        before = plain.campaign.identity("fp")
    capped = limited(
        tmp_path / "c", {"a": 1, "b": 3}, '\n[providers."http://127.0.0.1:8/v1"]\nmax_connections = 1\n'
    )
    with capped:
        assert capped.campaign.identity("fp") == before
        assert capped.campaign.models_by_name["a"].max_connections == 1


def test_a_providers_table_that_names_no_model_is_refused(tmp_path):
    path = write_campaign(tmp_path, models=("openai/gpt-x", "fake/b"))
    path.write_text(path.read_text() + '\n[providers."http://127.0.0.1:7/v1"]\nmax_connections = 2\n')
    with pytest.raises(BadInput, match=r"no model goes there .*'fake', 'openai'"):
        campaign_file.load(path)
    path.write_text(path.read_text().replace('"http://127.0.0.1:7/v1"', "openai"))
    assert campaign_file.load(path).providers["openai"].max_connections == 2
    path.write_text(path.read_text().replace("max_connections = 2", "max_connections = 0"))
    with pytest.raises(BadInput, match="max_connections"):
        campaign_file.load(path)


def test_a_provider_is_its_api_base_or_the_provider_part_of_the_name():
    assert provider_of("openai/gpt-5", None) == "openai"
    assert provider_of("openai/gpt-5", "http://h:1/v1/") == "http://h:1/v1"
    assert provider_of("local-model", None) == "local-model"


# -- the shared backoff ------------------------------------------------------------------------


def meters(n: int, backoff: Backoff) -> list[SessionMeter]:
    model = ModelSpec("openai/m", Decimal(3), Decimal(15), 100)
    ledger = Ledger(Decimal(100), {model.name: Decimal(100)})
    accounts = Accounts(ledger, Durable(), ev.EventBus(), {})  # type: ignore[arg-type]
    return [
        SessionMeter(
            accounts,
            ledger.open(f"s{i}", model.name, i, 1, "x", Decimal(1)),
            model,
            Decimal(1),
            backoff=backoff,
        )
        for i in range(n)
    ]


@pytest.mark.trio
async def test_a_429_delays_the_next_call_of_every_session_of_the_provider(mock_clock):
    mock_clock.autojump_threshold = 0
    first, second = meters(2, Backoff("openai"))
    start_ = trio.current_time()
    first.throttled(2.0)  # Retry-After: 2
    assert await second.authorise(Decimal("0.001"))
    assert trio.current_time() - start_ >= 2.0
    assert second.throttling() == Throttling(answers=0, wait_s=2.0)  # for its end line
    assert (first.throttling() or Throttling(0, 0)).answers == 1
    # Served: no wait any more.
    at = trio.current_time()
    assert await first.authorise(Decimal("0.001"))
    assert trio.current_time() == at


@pytest.mark.trio
async def test_separate_providers_do_not_wait_for_each_other(mock_clock):
    mock_clock.autojump_threshold = 0
    (throttled,) = meters(1, Backoff("openai"))
    (other,) = meters(1, Backoff("anthropic"))
    throttled.throttled(30.0)
    at = trio.current_time()
    assert await other.authorise(Decimal("0.001"))
    assert trio.current_time() == at


@pytest.mark.trio
async def test_without_retry_after_the_wait_doubles_and_a_served_call_resets_it(mock_clock):
    backoff = Backoff("p")
    assert backoff.throttled(None)[0] == 1.0
    assert backoff.throttled(None)[0] == 2.0
    assert backoff.throttled(None)[0] == 4.0
    assert backoff.throttled(3600.0)[0] == 60.0  # a huge Retry-After is cut to the cap
    assert backoff.throttled(float("nan"))[0] == 16.0  # unreadable: the exponential wait
    backoff.served()
    assert backoff.throttled(None)[0] == 1.0
