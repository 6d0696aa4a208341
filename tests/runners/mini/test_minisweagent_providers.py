"""Per-provider concurrency with the real runner against the scripted server: a model's
`max_connections` bounds its sessions at once (seen at the server), and a 429's `Retry-After`
holds back every session of that provider, once (one backoff they share), seen in the journal
and the audit."""

from __future__ import annotations

import json
import threading
import tomllib
from collections import Counter

import pytest
import tomli_w
import trio
from support.mini import journal, pred_on_path, run_campaign, write_campaign
from support.scripted_llm import SUBMIT, Reply, ScriptedLLM

from benchtui.engine import events as ev
from benchtui.report import build

TASKS = ["t1", "t2", "t3"]


@pytest.fixture(autouse=True)
def _env(tmp_path, monkeypatch):
    pred_on_path(tmp_path, monkeypatch)
    monkeypatch.setenv("SCRIPTED_API_KEY", "sk-test-scripted-0000")


def with_limits(path, limits: dict[str, int]) -> None:
    doc = tomllib.loads(path.read_text())
    for model in doc["models"]:
        if model["name"] in limits:
            model["max_connections"] = limits[model["name"]]
    path.write_text(tomli_w.dumps(doc))


def short(session: str) -> str:
    """`openai_scripted-a-0001` -> `a1`."""
    model, index = session.rsplit("-", 1)
    return model[-1] + str(int(index))


def task_of(request) -> str:
    return next(t for t in TASKS if request.mentions(f"`{t}`"))


@pytest.mark.trio
async def test_a_model_with_max_connections_1_never_has_two_sessions_at_the_server(tmp_path):
    """3 models × 3 tasks, parallelism 6, model a limited to 1: a's conversations at the server
    never overlap (a session's first request comes after the previous one's last answer), b and
    c run several sessions at once, and the launch order is round-robin among those that can."""
    models = ("openai/scripted-a", "openai/scripted-b", "openai/scripted-c")
    # The first wave (a0 and five sessions of b and c) fills every slot before any session ends: a
    # slow machine starts workers slowly, never fewer of them at once.
    started, first_wave = Counter[str](), threading.Event()
    lock = threading.Lock()

    def script(request):
        if request.turn == 0:
            with lock:
                started[request.model] += 1
                if sum(started.values()) >= 6:
                    first_wave.set()
            first_wave.wait(timeout=30)
        return Reply("ls", 300, 20, delay_s=0.2) if request.turn == 0 else Reply(SUBMIT, 400, 10, delay_s=0.2)

    with ScriptedLLM(script=script) as llm:
        path = write_campaign(tmp_path, llm.url, models=models, tasks=TASKS, parallelism=6)
        with_limits(path, {"openai/scripted-a": 1})
        with trio.fail_after(120):
            prep, _ = await run_campaign(path, tmp_path / "runs")
    spans: dict[tuple[str, str], list[float]] = {}
    for r in llm.requests:
        key = (r.model, task_of(r))
        first, last = spans.get(key, [r.received, r.answered])
        spans[key] = [min(first, r.received), max(last, r.answered)]
    a = sorted(span for (model, _), span in spans.items() if model == "scripted-a")
    assert len(a) == 3
    assert all(earlier[1] <= later[0] for earlier, later in zip(a, a[1:], strict=False)), a
    lines = (prep.run_dir / "sessions.jsonl").read_text().splitlines()
    records = [r for r in map(json.loads, lines) if "session" in r]
    running: Counter[str] = Counter()
    peak: Counter[str] = Counter()
    for r in records:
        running[r["model"]] += {"running": 1, "pending": 0}.get(r["state"], -1)
        peak[r["model"]] = max(peak[r["model"]], running[r["model"]])
    assert peak["openai/scripted-a"] == 1 and peak["openai/scripted-b"] == 3
    assert peak["openai/scripted-c"] >= 2  # its third starts when a slot frees, before or after c0/c1 end
    order = [short(r["session"]) for r in records if r["state"] == "running"]
    assert order[:6] == ["a0", "b0", "c0", "b1", "c1", "b2"]
    assert [s for s in order if s[0] == "a"] == ["a0", "a1", "a2"]
    assert {r["state"] for r in journal(prep.run_dir).values()} == {"done"}


@pytest.mark.trio
async def test_a_429_with_retry_after_2_holds_back_every_session_of_the_provider(tmp_path):
    """Two models on one api_base. x's first call gets 429 `Retry-After: 2`; y's first answer
    is held until the engine has taken the 429 in, so y's next call is made during the backoff.
    Both x's retry and y's next call reach the server at least 2 s after the 429 was sent."""
    throttled_seen = threading.Event()
    gave_429 = threading.Lock()
    first_x: list[object] = []

    def script(request):
        if request.model == "scripted-x" and request.turn == 0:
            with gave_429:
                if not first_x:
                    first_x.append(request)
                    return Reply(status=429, headers={"retry-after": "2"})
        if request.model == "scripted-y" and request.turn == 0:
            throttled_seen.wait(60)  # the engine's backoff has started: y's next call falls in it
        return Reply("ls", 300, 20) if request.turn == 0 else Reply(SUBMIT, 400, 10)

    async def watch(recorder) -> None:
        await recorder.until(lambda: any("answered 429" in n.message for n in recorder.of(ev.Notice)))
        throttled_seen.set()

    with ScriptedLLM(script=script) as llm:
        path = write_campaign(
            tmp_path,
            llm.url,
            models=("openai/scripted-x", "openai/scripted-y"),
            parallelism=2,
            runner={"retries": 2, "retry_backoff_s": 0.01},
        )
        with trio.fail_after(120):
            prep, recorder = await run_campaign(path, tmp_path / "runs", during=watch)
    (refused,) = [r for r in llm.requests if r.status == 429]
    x_retry = next(r for r in llm.requests if r.model == "scripted-x" and r.status == 200)
    y_next = next(r for r in llm.requests if r.model == "scripted-y" and r.turn == 1)
    assert x_retry.received - refused.answered >= 2.0
    assert y_next.received - refused.answered >= 2.0
    ends = journal(prep.run_dir)
    x, y = ends["openai_scripted-x-0000"], ends["openai_scripted-y-0000"]
    assert x["state"] == y["state"] == "done"
    assert x["throttled"] == 1 and y.get("throttled", 0) == 0
    assert y["throttle_wait_s"] > 0  # y waited on x's 429: one backoff for the provider
    notices = [n.message for n in recorder.of(ev.Notice) if "429" in n.message]
    assert notices == [
        f"{llm.url} answered 429 (too many requests, Retry-After 2 s): its sessions wait 2 s before calling it again"
    ]
    audit = build([prep.run_dir]).fairness
    assert audit.fair  # a note, not a finding: waiting costs time, not money or calls
    (note,) = [n for n in audit.notes if n.startswith("throttling: openai/scripted-x")]
    assert "answered 429 1 time(s)" in note
    assert any(n.startswith("throttling: openai/scripted-y") for n in audit.notes)
