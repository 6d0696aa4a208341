"""The top50 runner against a stand-in of the benchmark's runner CONTRACT (support/top50_standin,
written here: it reads the same variables, refuses a run without the image's baked state, calls
API_BASE as its LiteLLM does, writes a checkpointed submission.json of the real shape, exits 0 on
failure), end to end through the engine, placement `checkout` (root, a private mount namespace).

What it proves: one session is one whole run; every request is held and charged at the gateway,
the runner's retries included, and a refused one answers 401; a run cut off (the cap, the
watchdog, a crash) is never taken half-way but run again on --resume as attempt 2, its spend
kept as wasted and nothing counted twice; the file is kept byte for byte; what the file says
decides the outcome (never the exit code); a hostile OUTPUT (a link, a FIFO, a huge file) is
refused, never followed."""

from __future__ import annotations

import json
import os
from decimal import Decimal
from pathlib import Path

import pytest
import trio
from support import certificates, journal, last_states
from support.mini import pred_on_path, price, run_campaign
from support.scripted_upstream import Answer, Call, ScriptedUpstream
from support.top50 import (
    configure,
    confirmed_certificate,
    make_benchmark,
    make_library,
    require_namespace,
    runner_pids,
    write_campaign,
)

from benchtui.engine import events as ev

REAL_KEY = "sk-real-scripted-key-top50-77a1"
CALLS_PER_RUN = 2 + 50  # two triage generations, one in each of 50 episodes (the stand-in told so)


@pytest.fixture(autouse=True)
def _env(tmp_path, monkeypatch):
    require_namespace()  # outside the Trio run: a skip inside it loses its reason
    monkeypatch.setenv("SCRIPTED_API_KEY", REAL_KEY)


@pytest.fixture
def parts(tmp_path, monkeypatch):
    pred = pred_on_path(tmp_path, monkeypatch)
    return pred, make_library(tmp_path), make_benchmark(tmp_path)


def cheap(call: Call) -> Answer:
    return Answer(text="ok", input_tokens=1000, output_tokens=50)


def server_cost(up: ScriptedUpstream, script=cheap) -> Decimal:
    return sum((price(a.input_tokens, a.output_tokens) for a in map(script, up.calls)), Decimal(0))


@pytest.mark.trio
async def test_a_whole_run_is_one_session_charged_exactly_what_the_server_served(tmp_path, parts):
    pred, library, bench = parts
    cert = confirmed_certificate(pred, tmp_path / "cert")
    configure(bench, calls=1, accept=[3], certificate=cert, episode_sleep_s=0.3)  # 15 s: past idle threads
    with ScriptedUpstream(cheap) as up:
        path = write_campaign(tmp_path, up.url, bench, library)
        with trio.fail_after(240):
            prep, recorder = await run_campaign(path, tmp_path / "state")
    (record,) = last_states(prep.run_dir).values()
    assert (record["state"], record["result"], record["ending"]["name"]) == ("done", "bug_found", "found"), (
        record
    )
    assert len(up.calls) == CALLS_PER_RUN == record["calls"]
    assert Decimal(str(record["cost_usd"])) == server_cost(up)
    # Its max_tokens went out as the benchmark fixes it, with the real key; the runner saw a token.
    assert {c.body["max_tokens"] for c in up.calls} == {8192}
    assert all(c.headers["authorization"] == f"Bearer {REAL_KEY}" for c in up.calls)
    files = prep.run_dir / "sessions" / record["session"]
    kept = files / "attempt-1.submission.json"
    doc = json.loads(kept.read_bytes())
    assert doc["status"] == "completed" and len(doc["episodes"]) == 50
    assert doc["episodes"][2]["status"] == "bug_found"
    assert (files / "attempt-1.agent.log").read_bytes().startswith(b"Top50 completed")
    verdicts = json.loads((files / "attempt-1.verdicts.json").read_bytes())
    assert [v["status"] for v in verdicts["ours"]] == ["accepted"]
    assert verdicts["benchmark"]["verified_bugs"] == 1 and verdicts["findings"] == []
    # Progress came from the checkpoint: triage, then the episodes as they were written.
    notes = [e.note for e in recorder.of(ev.SessionProgress) if e.milestone]
    assert notes[0] == "triage" and notes[-1] == "completed 50/50, 1 accepted"
    assert any(n.startswith("episode ") and n.endswith("/50, 1 accepted") for n in notes), notes
    # Nothing of the run is left: no process, no key in any file, the host's /tmp untouched.
    assert runner_pids(bench) == []
    assert not Path("/tmp/prb-standin-was-here").exists()
    assert not [p for p in prep.run_dir.rglob("*") if p.is_file() and REAL_KEY.encode() in p.read_bytes()]


@pytest.mark.trio
async def test_a_certificate_our_verifier_rejects_is_an_audit_finding(tmp_path, parts):
    _, library, bench = parts
    cert = certificates.example()  # MIS -> MaximumClique: a correct rule in the stand-in pred
    configure(bench, calls=1, accept=[1], certificate=cert)
    with ScriptedUpstream(cheap) as up:
        path = write_campaign(tmp_path, up.url, bench, library)
        with trio.fail_after(240):
            prep, _ = await run_campaign(path, tmp_path / "state")
    (record,) = last_states(prep.run_dir).values()
    assert (record["state"], record["result"]) == ("done", "no_certificate"), record
    assert "audit: 1 disagreement" in record["reason"]
    verdicts = json.loads(next(prep.run_dir.glob("sessions/*/attempt-1.verdicts.json")).read_bytes())
    (finding,) = verdicts["findings"]
    assert finding.startswith("episode 1 (rule_00): the benchmark's verifier accepts, ours says rejected")


@pytest.mark.trio
async def test_a_run_the_cap_cuts_is_run_again_on_resume_as_attempt_2_and_nothing_counts_twice(
    tmp_path, parts
):
    _, library, bench = parts
    configure(bench, calls=1)
    served: dict[str, int] = {}

    def script(call: Call) -> Answer:
        # The first call of model a's second run costs $0.30: the next hold ($0.13) no longer fits
        # its $0.40. Every other call is cheap.
        served[call.body["model"]] = n = served.get(call.body["model"], 0) + 1
        if call.body["model"] == "scripted-a" and n == CALLS_PER_RUN + 1:
            return Answer(text="ok", input_tokens=100_000, output_tokens=50)
        return cheap(call)

    budget = {"total_usd": 2.0, "per_session_usd": 0.4}
    with ScriptedUpstream(script) as up:
        path = write_campaign(
            tmp_path, up.url, bench, library, models=("openai/scripted-a", "openai/scripted-b"),
            sessions=2, budget=budget, parallelism=1,
        )  # fmt: skip
        with trio.fail_after(400):
            prep, _ = await run_campaign(path, tmp_path / "state")
        first = last_states(prep.run_dir)
        cut = [r for r in first.values() if r["state"] == "error"]
        assert [r["session"] for r in cut] == [s for s in first if "scripted-a" in s][1:], first
        (cut_run,) = cut
        assert cut_run["retryable"] and cut_run["ending"]["name"] == "budget_exhausted"
        assert "refused" in cut_run["reason"] and "(401)" in cut_run["reason"]
        assert Decimal(str(cut_run["cost_usd"])) <= Decimal("0.4")
        # The refused calls never reached the server: it served 1 call of that run.
        assert served["scripted-a"] == CALLS_PER_RUN + 1 and served["scripted-b"] == 2 * CALLS_PER_RUN
        partial = prep.run_dir / "sessions" / cut_run["session"] / "attempt-1.submission.json"
        assert json.loads(partial.read_bytes())["status"] == "run_error"

        prep2, _ = await run_campaign(path, tmp_path / "state", resume=True)
    final = last_states(prep2.run_dir)
    again = final[cut_run["session"]]
    assert (again["state"], again["attempt"]) == ("done", 2), again
    assert partial.exists()  # attempt 1's file stays as it was, beside attempt 2's
    assert (partial.parent / "attempt-2.submission.json").exists()
    # Spend: every dollar the server served, once; attempt 1's kept as wasted.
    ledger = (prep2.run_dir / "ledger.toml").read_text()
    import tomllib

    totals = tomllib.loads(ledger)["totals"]
    assert Decimal(str(totals["spent_usd"])) == server_cost(up, lambda c: script_cost(c, up))
    assert Decimal(str(totals["wasted_usd"])) == Decimal(str(cut_run["cost_usd"]))
    assert Decimal(str(totals["spent_usd"])) <= Decimal("2.0")


def script_cost(call: Call, up: ScriptedUpstream) -> Answer:
    """What the server charged for `call` (its position among its model's calls)."""
    same = [c for c in up.calls if c.body["model"] == call.body["model"]]
    n = next(i for i, c in enumerate(same, 1) if c is call)
    if call.body["model"] == "scripted-a" and n == CALLS_PER_RUN + 1:
        return Answer(input_tokens=100_000, output_tokens=50)
    return cheap(call)


@pytest.mark.trio
async def test_the_watchdog_kills_the_whole_tree_and_the_run_is_retried(tmp_path, parts):
    _, library, bench = parts
    configure(bench, calls=1, hang_after=3)
    with ScriptedUpstream(cheap) as up:
        path = write_campaign(tmp_path, up.url, bench, library, runner={"wall_time_s": 8})
        with trio.fail_after(120):
            prep, _ = await run_campaign(path, tmp_path / "state")
    (record,) = last_states(prep.run_dir).values()
    assert (record["state"], record["ending"]["name"], record["retryable"]) == ("error", "wall_time", True)
    assert "after episode 3/50" in record["reason"]
    assert runner_pids(bench) == []
    assert len(up.calls) == 2 + 3 and Decimal(str(record["cost_usd"])) == server_cost(up)


@pytest.mark.trio
async def test_a_killed_run_leaves_no_process_and_keeps_what_it_wrote(tmp_path, parts):
    _, library, bench = parts
    configure(bench, calls=1, hang_after=2)

    async def kill_when_hanging(recorder):
        with trio.fail_after(120):
            while not any(e.note.startswith("episode 3/") for e in recorder.of(ev.SessionProgress)):
                await trio.sleep(0.05)
        (started,) = recorder.of(ev.SessionStarted)
        assert recorder.scheduler.kill(started.session)

    with ScriptedUpstream(cheap) as up:
        path = write_campaign(tmp_path, up.url, bench, library)
        with trio.fail_after(120):
            prep, _ = await run_campaign(path, tmp_path / "state", during=kill_when_hanging)
    (record,) = last_states(prep.run_dir).values()
    assert record["state"] == "killed"
    assert runner_pids(bench) == []
    kept = next(prep.run_dir.glob("sessions/*/attempt-1.submission.json"))
    assert len(json.loads(kept.read_bytes())["episodes"]) == 2
    assert Decimal(str(record["cost_usd"])) == server_cost(up)


@pytest.mark.trio
@pytest.mark.parametrize(
    ("config", "says"),
    [
        ({"crash_after": 4}, "run did not finish"),  # exit 9, its last checkpoint: run incomplete
        ({"episodes": 7}, "run did not finish"),  # exit 0, status run_error: the file decides
        ({"plant": "symlink"}, "symbolic link"),
        ({"plant": "fifo"}, "FIFO"),
        ({"plant": "huge", "huge_bytes": 1 << 40}, "larger than"),
        ({"plant": "garbage"}, "not JSON"),
    ],
)
async def test_a_run_that_did_not_end_whole_is_an_infrastructure_error(tmp_path, parts, config, says):
    _, library, bench = parts
    configure(bench, calls=1, **config)
    with ScriptedUpstream(cheap) as up:
        path = write_campaign(tmp_path, up.url, bench, library)
        with trio.fail_after(240):
            prep, _ = await run_campaign(path, tmp_path / "state")
    (record,) = last_states(prep.run_dir).values()
    assert (record["state"], record["retryable"]) == ("error", True), record
    assert says in record["reason"], record["reason"]
    assert Decimal(str(record["cost_usd"])) == server_cost(up)
    files = next(prep.run_dir.glob("sessions/*"))
    for name in os.listdir(files):  # nothing it planted was followed or copied as a submission
        assert not (files / name).is_symlink()


@pytest.mark.trio
async def test_a_refused_call_answers_401_and_the_runner_stops_at_once(tmp_path, parts):
    _, library, bench = parts
    configure(bench, calls=1)
    with ScriptedUpstream(cheap) as up:
        # $0.12 holds less than one call's worst case: the first request is refused.
        path = write_campaign(tmp_path, up.url, bench, library, budget={"total_usd": 0.12})
        with trio.fail_after(120):
            prep, _ = await run_campaign(path, tmp_path / "state")
    (record,) = last_states(prep.run_dir).values()
    assert record["ending"]["name"] == "budget_exhausted" and record["retryable"]
    assert "refused 3 call(s) (401)" in record["reason"]  # LiteLLM's 1 + 2 retries, then it stopped
    assert up.calls == [] and record["cost_usd"] == 0
    assert len(journal(prep.run_dir)) >= 2


def test_an_engine_killed_with_sigkill_takes_its_runs_along(tmp_path, parts):
    import signal
    import subprocess
    import sys
    import time

    _, library, bench = parts
    configure(bench, calls=1, hang_after=2)
    with ScriptedUpstream(cheap) as up:
        path = write_campaign(tmp_path, up.url, bench, library)
        engine = subprocess.Popen(
            [sys.executable, "-m", "benchtui", str(path), "--no-ui", "--state-dir", str(tmp_path / "state")],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        )  # fmt: skip
        try:
            deadline = time.monotonic() + 120
            while len(up.calls) < 2 + 2 and time.monotonic() < deadline:
                time.sleep(0.1)
            assert runner_pids(bench), "the run did not start"
        finally:
            engine.send_signal(signal.SIGKILL)
            engine.wait()
        deadline = time.monotonic() + 10
        while runner_pids(bench) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert runner_pids(bench) == []
