"""Real agent CLIs (npm's codex and claude, PyPI's mini) as `command` runners, end to end through
the engine: in bubblewrap, behind the gateway, against a scripted provider on 127.0.0.1. Each
runs a command, prints a certificate that `pred` verifies, is charged exactly its usage, and
never sees the real key; killed like `k` in the TUI does, it leaves no process behind."""

from __future__ import annotations

import os
import signal
import time
import tomllib
from dataclasses import replace
from decimal import Decimal
from pathlib import Path

import pytest
import tomli_w
import trio
from support import popen
from support.command import MAKE_CERTIFICATE, agent_available, had_tool_result, hunt, write_campaign
from support.mini import journal, pred_on_path, price, run_campaign
from support.processes import pids_matching
from support.real_parts import require, require_tools
from support.scripted_upstream import Answer, Call, ScriptedUpstream

from benchtui.engine import events as ev

REAL_KEY = "sk-real-scripted-key-4f8a1c9e"
# What the agent's command also prints: its own environment and every environment it can read.
SHOW_ENV = "env; cat /proc/[0-9]*/environ 2>/dev/null | tr '\\0' '\\n'; "


@pytest.fixture(autouse=True)
def _env(tmp_path, monkeypatch, request):
    # Checked here, outside the Trio run: a skip raised inside it loses its reason in the report.
    require_tools("bwrap", "socat")  # every test here runs its agent in bubblewrap, behind socat
    profile = getattr(request.node, "callspec", None) and request.node.callspec.params.get("profile")
    if profile:
        need(profile)
    pred_on_path(tmp_path, monkeypatch)
    monkeypatch.setenv("SCRIPTED_API_KEY", REAL_KEY)


def need(profile: str) -> None:
    if profile != "mini":  # the npm agent CLIs are node scripts
        require_tools("node")
    require(
        f"the {profile} agent CLI",
        agent_available(profile),
        "run .ci/run's agent block (npm install --prefix .agents ...)",
    )


@pytest.mark.trio
@pytest.mark.parametrize("profile", ["codex", "claude", "mini"])
async def test_an_agent_cli_finds_a_bug_through_the_gateway_in_bubblewrap(tmp_path, profile):
    with ScriptedUpstream(lambda call: hunt(call, SHOW_ENV + MAKE_CERTIFICATE)) as up:
        path = write_campaign(tmp_path, up.url, profile)
        with trio.fail_after(240):
            prep, _ = await run_campaign(path, tmp_path / "state")
    (record,) = journal(prep.run_dir).values()
    assert (record["state"], record["result"]) == ("done", "bug_found"), record["reason"]
    # Exactly the usage the provider reported, at the campaign's prices; one hold per call.
    assert len(up.calls) >= 2 and record["calls"] == len(up.calls)
    usage = [hunt(c, SHOW_ENV + MAKE_CERTIFICATE) for c in up.calls]
    assert record["cost_usd"] == float(sum(price(a.input_tokens, a.output_tokens) for a in usage))
    # The real key went to the provider only: not into the sandbox (the agent's command printed
    # every environment it could read, and that output came back in the next call) ...
    assert all(
        c.headers["authorization" if c.api != "messages" else "x-api-key"].endswith(REAL_KEY)
        for c in up.calls
    )
    shown = up.calls[-1].text
    assert "benchtui-" in shown and "OPENAI_API_KEY" in shown  # the session token was visible
    assert REAL_KEY not in shown
    # ... nor into any file under the run dir.
    assert pids_matching(str(prep.run_dir)) == []  # nothing of the sandbox outlives the session
    files = [p for p in prep.run_dir.rglob("*") if p.is_file()]
    assert any(p.name == "attempt-1.agent.log" for p in files)
    assert not [p for p in files if REAL_KEY.encode() in p.read_bytes()]


def cached(answer: Answer, api: str) -> Answer:
    """The same answer, three quarters of its prompt reported as read from the provider's cache,
    in the API's own shape."""
    read = answer.input_tokens * 3 // 4
    if api == "messages":  # Anthropic: input_tokens excludes the cache buckets
        usage = {"input_tokens": answer.input_tokens - read, "cache_read_input_tokens": read,
                 "output_tokens": answer.output_tokens}  # fmt: skip
    elif api == "responses":
        usage = {"input_tokens": answer.input_tokens, "output_tokens": answer.output_tokens,
                 "input_tokens_details": {"cached_tokens": read}}  # fmt: skip
    else:
        usage = {"prompt_tokens": answer.input_tokens, "completion_tokens": answer.output_tokens,
                 "prompt_tokens_details": {"cached_tokens": read}}  # fmt: skip
    return replace(answer, usage_block=usage)


@pytest.mark.trio
@pytest.mark.parametrize("profile", ["codex", "claude", "mini"])
async def test_an_agent_clis_cached_prompt_tokens_are_charged_at_the_cache_price(tmp_path, profile):
    with ScriptedUpstream(lambda call: cached(hunt(call), call.api)) as up:
        path = write_campaign(tmp_path, up.url, profile)
        doc = tomllib.loads(path.read_text())
        doc["models"][0]["cache_read_usd_per_mtok"] = 0.3
        path.write_text(tomli_w.dumps(doc))
        with trio.fail_after(240):
            prep, _ = await run_campaign(path, tmp_path / "state")
    (record,) = journal(prep.run_dir).values()
    assert record["state"] == "done", record["reason"]
    answers = [hunt(c) for c in up.calls]
    reads = [a.input_tokens * 3 // 4 for a in answers]
    expected = sum(
        (Decimal(a.input_tokens - r) * 3 + Decimal(r) * Decimal("0.3") + Decimal(a.output_tokens) * 15)
        / 1_000_000
        for a, r in zip(answers, reads, strict=True)
    )
    assert Decimal(repr(record["cost_usd"])) == expected  # Σ bucket tokens × bucket price, exactly
    assert record["usage"]["cache_read"] == sum(reads)


@pytest.mark.trio
@pytest.mark.parametrize("profile", ["codex", "claude"])
async def test_killing_an_agent_cli_session_leaves_no_process(tmp_path, profile):
    marker = "sleep 611.5"

    def script(call: Call) -> Answer:
        return hunt(call, marker) if not had_tool_result(call) else Answer()

    async def kill_once_sleeping(recorder):
        with trio.fail_after(120):
            while not pids_matching(marker):
                await trio.sleep(0.05)
        (started,) = recorder.of(ev.SessionStarted)
        killed_at = trio.current_time()
        assert recorder.scheduler.kill(started.session)  # what `k` in the TUI calls
        while not recorder.of(ev.SessionEnded):
            await trio.sleep(0.01)
        recorder.kill_s = trio.current_time() - killed_at

    with ScriptedUpstream(script) as up:
        path = write_campaign(tmp_path, up.url, profile)
        with trio.fail_after(240):
            prep, recorder = await run_campaign(path, tmp_path / "state", during=kill_once_sleeping)
    (record,) = journal(prep.run_dir).values()
    assert record["state"] == "killed" and recorder.kill_s < 5
    assert pids_matching(marker) == [] and pids_matching(str(prep.run_dir)) == []
    assert record["cost_usd"] == float(price(3000, 80))  # the call it made stays charged
    assert not any(os.path.exists(p) for p in [Path(prep.run_dir, "sessions", record["session"], "workdir")])


@pytest.mark.trio
@pytest.mark.parametrize(("profile", "per_session"), [("codex", 0.16), ("claude", 0.27)])
async def test_an_agent_cli_whose_budget_is_spent_is_refused_and_stops(tmp_path, profile, per_session):
    # The first call's worst case (each request is 40-80 kB: one prompt token per byte) fits the
    # session's reservation; after its charge, the second one does not.
    with ScriptedUpstream(hunt) as up:
        path = write_campaign(
            tmp_path, up.url, profile, budget={"total_usd": 1.0, "per_session_usd": per_session}
        )
        with trio.fail_after(180):
            prep, _ = await run_campaign(path, tmp_path / "state")
    (record,) = journal(prep.run_dir).values()
    assert record["state"] == "done"  # a clean stop (its command printed a certificate: verified)
    assert len(up.calls) == 1 and record["calls"] == 1  # the refused call never reached the provider
    assert record["cost_usd"] == float(price(3000, 80)) <= per_session
    log = next(prep.run_dir.glob("sessions/*/attempt-1.agent.log")).read_text()
    assert "budget is spent" in log or "quota" in log.lower()


def test_an_engine_killed_with_sigkill_takes_its_agents_sandboxes_along(tmp_path):
    # Nothing of the engine runs its clean-up: the sandbox notices its lifeline pipe closing.
    need("codex")
    marker = "sleep 612.5"
    with ScriptedUpstream(lambda call: hunt(call, marker) if not had_tool_result(call) else Answer()) as up:
        path = write_campaign(tmp_path, up.url, "codex")
        engine = popen(path, "--no-ui", "--state-dir", tmp_path / "state", cwd=tmp_path)
        try:
            deadline = time.monotonic() + 120
            while not pids_matching(marker) and time.monotonic() < deadline:
                time.sleep(0.05)
            assert pids_matching(marker), (
                engine.stderr.read() if engine.poll() is not None else "no agent command"
            )
        finally:
            engine.send_signal(signal.SIGKILL)
            engine.wait()
        deadline = time.monotonic() + 5
        while pids_matching(str(tmp_path)) and time.monotonic() < deadline:
            time.sleep(0.05)
    assert pids_matching(str(tmp_path)) == []


@pytest.mark.trio
@pytest.mark.parametrize("profile", ["codex", "claude", "mini"])
async def test_an_agent_cli_gets_its_pred_calls_counted_by_the_shim(tmp_path, profile):
    """Logical budgets through a real agent CLI: its shell's `pred` is the shim; the third and later
    calls are refused with the counter's name, which the agent sees (and the model in the next call)."""
    command = "for i in 1 2 3 4 5; do pred --version; done"
    limits = {"model_calls": 5, "submits": 1, "tools": {"pred": 3}}
    with ScriptedUpstream(lambda call: hunt(call, command)) as up:
        path = write_campaign(tmp_path, up.url, profile, budget={"total_usd": 1.0, "per_session": limits})
        with trio.fail_after(240):
            prep, _ = await run_campaign(path, tmp_path / "state")
    (record,) = journal(prep.run_dir).values()
    shown = up.calls[-1].text
    assert shown.count("pred 0.5.0-stand-in") == 3, shown[-3000:]
    assert shown.count("budget of 3 `pred` calls is spent (counter tools.pred)") == 2  # JSON-escaped quotes
    assert record["counters"] == {"model_calls": len(up.calls), "submits": 0, "tools": {"pred": 3}}
    assert record["exhausted"] == ["tools.pred"]


@pytest.mark.trio
@pytest.mark.parametrize("profile", ["mini"])
async def test_an_agent_cli_submits_and_an_accepted_submit_stops_it(tmp_path, profile):
    """`submit FILE` through an agent CLI's own shell: REJECTED for a malformed file (its unit
    taken), ACCEPTED for the certificate, and the agent is stopped there (it would sleep on)."""
    command = (
        "echo '{' > bad.json; submit bad.json; "
        + MAKE_CERTIFICATE.split(" && printf")[0]
        + ' && printf \'{"rule": "%s", "violation": "suboptimal_extraction", "source": %s, "bundle": %s, '
        '"target_config": "0,1,0"}\' MaximumIndependentSetToMinimumVertexCover "$(cat source.json)" '
        '"$(cat bundle.json)" > cert.json && submit cert.json; sleep 60'
    )
    limits = {"model_calls": 5, "submits": 2, "tools": {"pred": 5}}
    with ScriptedUpstream(lambda call: hunt(call, command)) as up:
        path = write_campaign(tmp_path, up.url, profile, budget={"total_usd": 1.0, "per_session": limits})
        started = time.monotonic()
        with trio.fail_after(240):
            prep, _ = await run_campaign(path, tmp_path / "state")
    assert time.monotonic() - started < 55  # stopped at ACCEPTED, not after its sleep
    (record,) = journal(prep.run_dir).values()
    assert record["result"] == "bug_found", record
    assert record["counters"]["submits"] == 2
    session = prep.run_dir / "sessions" / record["session"]
    evidence = [line for line in (session / "evidence.jsonl").read_text().splitlines() if '"submit"' in line]
    assert ['"rejected"' in evidence[0], '"accepted"' in evidence[1]] == [True, True]
