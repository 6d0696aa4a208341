"""`[executor] kind = "ray"`: the command runner's agents on a real two-node Ray cluster started
here, with the engine (launch loop, ledger, journal, meter, gateway) staying in this process.

Covered: a campaign end to end (every session done, exact charges, results shaped as a local
run's), the hard cap at parallelism 64, `k` killing an agent on node_b within a second, node_b's
raylet dying mid-campaign (retryable errors, then `--resume` finishes), and SIGKILL of the
engine (Ray reaps the job's workers: no agent survives)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from decimal import Decimal

import pytest
import trio
from support import check_accounts, popen
from support.mini import journal, outcome_rows, pred_on_path, price, run_campaign
from support.processes import pids_matching
from support.ray import LocalCluster, left_behind, node_folders, write_campaign
from support.real_parts import require, require_tools
from support.scripted_upstream import Answer, Call, ScriptedUpstream

from benchtui.engine import events as ev
from benchtui.targets.problem_reductions import find_blocks

try:
    import ray
except ImportError:  # the `ray` extra is not installed
    ray = None

MAKE_CERTIFICATE = (
    "pred create MIS --graph 0-1,1-2 -o source.json && "
    "pred reduce source.json --to MinimumVertexCover --json > bundle.json && "
    'printf \'CERTIFICATE_START\\n{"rule": "MaximumIndependentSetToMinimumVertexCover", '
    '"violation": "suboptimal_extraction", "source": %s, "bundle": %s, "target_config": "0,1,0"}'
    '\\nCERTIFICATE_END\\n\' "$(cat source.json)" "$(cat bundle.json)"'
)


STALE_TOKEN = "stale-token-of-a-stray-local-ray-init-0000"


@pytest.fixture(scope="session")
def stale_home(tmp_path_factory):
    """A HOME as a stray local `ray.init()` leaves it: ~/.ray/auth_token holding its token."""
    home = tmp_path_factory.mktemp("stale-home")
    (home / ".ray").mkdir()
    (home / ".ray" / "auth_token").write_text(STALE_TOKEN)
    return home


@pytest.fixture(scope="session")
def cluster(stale_home):
    require("Ray", ray is not None, "pip install -e '.[ray]'")
    require_tools("bwrap", "socat")  # before the cluster starts: its agents run in bubblewrap, behind socat
    # Started by a user whose ~/.ray holds a stale token: every test here shows it changes nothing.
    found = LocalCluster(environ={**os.environ, "HOME": str(stale_home)})
    try:
        yield found.start()
    finally:
        found.stop()


@pytest.fixture(autouse=True)
def _env(tmp_path, monkeypatch):
    require_tools("bwrap", "socat")
    pred_on_path(tmp_path, monkeypatch)
    monkeypatch.setenv("SCRIPTED_API_KEY", "sk-scripted")


def on(cluster, node="node_b", **more):
    return {"kind": "ray", "address": cluster.address, "resources": {node: 0.01}, "num_cpus": 0, **more}


def hunt(call: Call) -> Answer:
    """First call: make a certificate with pred; then print it."""
    if len(call.body["messages"]) == 1:
        return Answer(text="RUN: " + MAKE_CERTIFICATE, input_tokens=1000, output_tokens=50)
    (block,) = find_blocks(call.body["messages"][-1]["content"])
    return Answer(text=f"CERTIFICATE_START\n{block}\nCERTIFICATE_END", input_tokens=2000, output_tokens=300)


def shape(run_dir):
    """What a run looks like, minus what differs between runs (times, ids, where it ran)."""
    records = sorted(journal(run_dir).values(), key=lambda r: r["session"])
    results = {p.name: json.loads(p.read_text()) for p in sorted((run_dir / "results").glob("*.json"))}
    return (
        [(sorted(r), r["state"], r["result"], r["cost_usd"], r["calls"]) for r in records],
        {
            name: (sorted(doc), [sorted(row) for row in doc.get("results", [])])
            for name, doc in results.items()
        },
    )


@pytest.mark.trio
async def test_a_campaign_on_ray_runs_end_to_end_like_a_local_one(tmp_path, cluster):
    with ScriptedUpstream(hunt) as up:
        remote = write_campaign(tmp_path, up.url, executor=on(cluster), name="onray", repeats=2)
        local = write_campaign(tmp_path, up.url, executor=None, name="local", repeats=2)
        with trio.fail_after(240):
            prep, _ = await run_campaign(remote, tmp_path / "state")
            local_prep, _ = await run_campaign(local, tmp_path / "state")
    records = journal(prep.run_dir)
    assert len(records) == 4
    for record in records.values():
        assert (record["state"], record["result"]) == ("done", "bug_found"), record["reason"]
        assert record["calls"] == 2
        assert Decimal(repr(record["cost_usd"])) == price(1000, 50) + price(2000, 300)
    check_accounts(prep.run_dir)
    assert shape(prep.run_dir) == shape(local_prep.run_dir)
    # Where each session ran is in its details; the agent's log came back from the node.
    details = outcome_rows(prep.run_dir)
    assert len(details) == 4 and all(d["executor"] == "ray" and d["node"]["ip"] for d in details)
    # Their calls went to the gateway's relay on their own node, not to this machine's.
    assert all(d["node"]["gateway"].startswith("127.0.0.1:") for d in details)
    logs = list(prep.run_dir.glob("sessions/*/attempt-1.agent.log"))
    assert len(logs) == 4 and all("CERTIFICATE_START" in p.read_text() for p in logs)


@pytest.mark.slow
@pytest.mark.trio
async def test_the_hard_cap_holds_at_parallelism_64_on_node_b(tmp_path, cluster):
    # Each session's one call fits its $0.03 reservation (worst case ~$0.028) and costs $0.0165:
    # 33 reservations fit in a model's $1 cap, so 64 run at once, until the caps run out.
    with ScriptedUpstream(lambda call: Answer(text="No luck.", input_tokens=1000, output_tokens=900)) as up:
        path = write_campaign(
            tmp_path, up.url, executor=on(cluster), repeats=64, parallelism=64,
            budget={"total_usd": 2.0, "per_session_usd": 0.03},
        )  # fmt: skip
        with trio.fail_after(420):
            prep, recorder = await run_campaign(path, tmp_path / "state")
    records = journal(prep.run_dir).values()
    states = [r["state"] for r in records]
    assert set(states) == {"done", "skipped_budget"} and states.count("skipped_budget") > 0
    done = [r for r in records if r["state"] == "done"]
    assert all(Decimal(repr(r["cost_usd"])) == price(1000, 900) and r["calls"] == 1 for r in done)
    assert len(up.calls) == len(done)  # no call went out unauthorised
    check_accounts(prep.run_dir)  # spend <= every cap, totals = sum of sessions
    running = peak = 0
    for event in recorder.events:
        running += isinstance(event, ev.SessionStarted) - isinstance(event, ev.SessionEnded)
        peak = max(peak, running)
    assert peak > 33  # more than one model's worth at once: the caps, not the parallelism, bound it


@pytest.mark.trio
async def test_killing_a_session_on_node_b_stops_its_agent_within_a_second(tmp_path, cluster):
    marker = "sleep 613.5"

    async def kill_once_sleeping(recorder):
        with trio.fail_after(120):
            while not pids_matching(marker):
                await trio.sleep(0.02)
        assert set(pids_matching(marker)) <= set(cluster.pids("node_b"))  # it runs on node_b
        (started,) = recorder.of(ev.SessionStarted)
        killed_at = time.monotonic()
        assert recorder.scheduler.kill(started.session)  # what `k` in the TUI calls
        while pids_matching(marker) and time.monotonic() - killed_at < 10:
            await trio.sleep(0.01)
        recorder.kill_s = time.monotonic() - killed_at

    before = node_folders()
    with ScriptedUpstream(lambda call: Answer(text="RUN: " + marker)) as up:
        path = write_campaign(tmp_path, up.url, executor=on(cluster), models=("openai/scripted-a",))
        with trio.fail_after(180):
            prep, recorder = await run_campaign(path, tmp_path / "state", during=kill_once_sleeping)
    (record,) = journal(prep.run_dir).values()
    assert record["state"] == "killed" and recorder.kill_s < 1.0, recorder.kill_s
    assert pids_matching(marker) == []
    assert left_behind(before) == set()  # the node's copy of the target is gone too
    assert Decimal(repr(record["cost_usd"])) == price(1000, 50)  # the call it made stays charged


@pytest.mark.trio
async def test_node_b_dying_ends_its_sessions_as_retryable_errors_and_resume_finishes(tmp_path, cluster):
    marker, stalled = "sleep 614.5", {"yes": True}
    before = node_folders()

    def script(call: Call) -> Answer:
        return Answer(text="RUN: " + marker) if stalled["yes"] else hunt(call)

    async def kill_node_b(recorder):
        with trio.fail_after(120):
            while len(pids_matching(marker)) < 3:
                await trio.sleep(0.05)
        signal_at = time.monotonic()
        cluster.kill_raylet("node_b")
        with trio.fail_after(60):
            await recorder.until(lambda: len(recorder.of(ev.SessionEnded)) == 3)
        recorder.noticed_s = time.monotonic() - signal_at

    try:
        with ScriptedUpstream(script) as up:
            path = write_campaign(
                tmp_path, up.url, executor=on(cluster), models=("openai/scripted-a",), repeats=3
            )
            with trio.fail_after(180):
                prep, recorder = await run_campaign(path, tmp_path / "state", during=kill_node_b)
            records = journal(prep.run_dir).values()
            assert [(r["state"], r["retryable"]) for r in records] == [("error", True)] * 3, [
                r["reason"] for r in records
            ]
            assert all(Decimal(repr(r["cost_usd"])) == price(1000, 50) for r in records)  # spend kept
            check_accounts(prep.run_dir)
            deadline = time.monotonic() + 5
            while pids_matching(marker) and time.monotonic() < deadline:
                time.sleep(0.05)
            assert pids_matching(marker) == []  # the agents died with their node
            assert left_behind(before) == set()
            cluster.kill("node_b")
            cluster.start_node_b()  # a new node_b joins; --resume retries the three sessions there
            stalled["yes"] = False
            with trio.fail_after(180):
                prep, _ = await run_campaign(path, tmp_path / "state", resume=True)
    finally:
        if not cluster.pids("node_b"):
            cluster.start_node_b()
    records = journal(prep.run_dir).values()
    assert [(r["state"], r["result"], r["attempt"]) for r in records] == [("done", "bug_found", 2)] * 3
    check_accounts(prep.run_dir)


def test_sigkill_of_the_engine_leaves_no_agent_on_any_node(tmp_path, cluster):
    # Ray notices its driver gone and kills the job's workers; each agent's lifeline does the rest.
    marker = "sleep 615.5"
    before = node_folders()
    with ScriptedUpstream(lambda call: Answer(text="RUN: " + marker)) as up:
        path = write_campaign(tmp_path, up.url, executor=on(cluster), repeats=2)
        engine = popen(path, "--no-ui", "--state-dir", tmp_path / "state", cwd=tmp_path)
        try:
            deadline = time.monotonic() + 120
            while len(pids_matching(marker)) < 4 and time.monotonic() < deadline:
                time.sleep(0.05)
            assert len(pids_matching(marker)) == 4, (
                engine.stderr.read() if engine.poll() is not None else "not every agent started"
            )
        finally:
            engine.send_signal(signal.SIGKILL)
            engine.wait()
        killed_at = time.monotonic()
        while pids_matching(marker) and time.monotonic() - killed_at < 10:
            time.sleep(0.02)
        gone_s = time.monotonic() - killed_at
    assert pids_matching(marker) == []
    assert left_behind(before) == set()
    print(f"every agent gone {gone_s:.2f} s after the engine's SIGKILL")  # README figure (pytest -s)


@pytest.mark.trio
async def test_the_mini_runner_on_node_b_finds_a_bug_metered_by_this_engine(tmp_path, cluster):
    # The worker runs on node_b and calls back; its channel (authorise/usage) is served here.
    from support.mini import FIND_BUG
    from support.mini import write_campaign as mini_campaign
    from support.scripted_llm import ScriptedLLM

    with ScriptedLLM(FIND_BUG) as llm:
        path = mini_campaign(tmp_path, llm.url, runner={"environment": "bubblewrap"}, executor=on(cluster))
        with trio.fail_after(180):
            prep, _ = await run_campaign(path, tmp_path / "runs")
    (record,) = journal(prep.run_dir).values()
    assert (record["state"], record["result"]) == ("done", "bug_found"), record["reason"]
    assert record["calls"] == len(FIND_BUG)
    expected = sum((price(r.prompt_tokens, r.completion_tokens) for r in FIND_BUG), start=price(0, 0))
    assert Decimal(repr(record["cost_usd"])) == expected
    check_accounts(prep.run_dir)
    (row,) = outcome_rows(prep.run_dir)
    assert row["executor"] == "ray" and row["node"]["ip"] and row["verify_details"]["status"] == "accepted"
    session_dir = prep.run_dir / "sessions" / record["session"]
    trajectory = json.loads((session_dir / "attempt-1.traj.json").read_text())
    assert trajectory["info"]["exit_status"] == "Submitted"  # written on node_b, brought back
    assert (session_dir / "attempt-1.worker.log").exists()


@pytest.mark.trio
async def test_killing_a_mini_session_on_node_b_stops_its_worker_within_a_second(tmp_path, cluster):
    from support.mini import write_campaign as mini_campaign
    from support.scripted_llm import Reply, ScriptedLLM

    marker = "sleep 616.5"

    async def kill_once_sleeping(recorder):
        with trio.fail_after(120):
            while not pids_matching(marker):
                await trio.sleep(0.02)
        assert set(pids_matching(marker)) <= set(cluster.pids("node_b"))
        (started,) = recorder.of(ev.SessionStarted)
        killed_at = time.monotonic()
        assert recorder.scheduler.kill(started.session)
        while pids_matching(marker) and time.monotonic() - killed_at < 10:
            await trio.sleep(0.01)
        recorder.kill_s = time.monotonic() - killed_at

    before = node_folders()
    with ScriptedLLM([Reply(marker, 1000, 50)]) as llm:
        path = mini_campaign(tmp_path, llm.url, runner={"environment": "bubblewrap"}, executor=on(cluster))
        with trio.fail_after(180):
            prep, recorder = await run_campaign(path, tmp_path / "runs", during=kill_once_sleeping)
    (record,) = journal(prep.run_dir).values()
    assert record["state"] == "killed" and recorder.kill_s < 1.0, recorder.kill_s
    assert Decimal(repr(record["cost_usd"])) == price(1000, 50)
    assert left_behind(before) == set()


def test_a_stale_ray_token_in_the_users_home_neither_breaks_the_cluster_nor_reaches_it(cluster, stale_home):
    """A stray local `ray.init()` leaves ~/.ray/auth_token; a head started while it is there
    (RAY_AUTH_MODE unset) turned token authentication on for itself alone, and node_b, the engine
    and every two-node test then failed with InvalidAuthToken. The cluster here was started from a HOME
    holding such a token: its daemons run with a HOME of their own and authentication pinned off,
    and a driver whose HOME holds the stale token runs a task on node_b."""
    assert (stale_home / ".ray" / "auth_token").read_text() == STALE_TOKEN  # the trap is set
    daemons = [p for p in cluster.pids() if any(d in _cmdline(p) for d in ("gcs_server", "raylet/raylet"))]
    assert len(daemons) >= 3, daemons  # the head's GCS and raylet, node_b's raylet
    for pid in daemons:
        env = _environ(pid)
        assert (env.get("HOME"), env.get("RAY_AUTH_MODE")) == (str(cluster.home), "disabled"), _cmdline(pid)
    assert not (cluster.home / ".ray").exists()
    driver = (
        f"import ray; ray.init(address={cluster.address!r}, logging_level='error', log_to_driver=False); "
        "task = ray.remote(lambda: 'ran on node_b').options(resources={'node_b': 0.01}, num_cpus=0); "
        "print(ray.get(task.remote(), timeout=60))"
    )
    env = {**os.environ, "HOME": str(stale_home), "RAY_USAGE_STATS_ENABLED": "0"}
    done = subprocess.run(
        [sys.executable, "-c", driver], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0 and done.stdout.strip() == "ran on node_b", done.stderr[-2000:]


def _cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def _environ(pid: int) -> dict[str, str]:
    with open(f"/proc/{pid}/environ", "rb") as f:
        pairs = [item.split(b"=", 1) for item in f.read().split(b"\0") if b"=" in item]
    return {k.decode(errors="replace"): v.decode(errors="replace") for k, v in pairs}


@pytest.mark.trio
async def test_resources_the_cluster_lacks_end_sessions_as_retryable_errors_not_a_hang(tmp_path, cluster):
    with ScriptedUpstream(hunt) as up:
        path = write_campaign(
            tmp_path, up.url, executor=on(cluster, node="node_z"), models=("openai/scripted-a",)
        )
        with trio.fail_after(60):
            prep, _ = await run_campaign(path, tmp_path / "state")
    (record,) = journal(prep.run_dir).values()
    assert (record["state"], record["retryable"]) == ("error", True)
    assert "lacks node_z=0.01 (cluster: 0)" in record["reason"] and not up.calls


@pytest.mark.trio
async def test_a_cluster_nobody_serves_ends_sessions_at_once_as_retryable_errors(tmp_path):
    # ray.init on such an address retries for minutes: a TCP probe refuses it first.
    require("Ray", ray is not None, "pip install -e '.[ray]'")
    from support.ray import free_port

    executor = {"kind": "ray", "address": f"127.0.0.1:{free_port()}", "num_cpus": 0}
    with ScriptedUpstream(hunt) as up:
        path = write_campaign(tmp_path, up.url, executor=executor, models=("openai/scripted-a",))
        with trio.fail_after(30):
            prep, _ = await run_campaign(path, tmp_path / "state")
    (record,) = journal(prep.run_dir).values()
    assert (record["state"], record["retryable"]) == ("error", True)
    assert "cannot reach the Ray cluster at 127.0.0.1:" in record["reason"] and not up.calls


SUBMIT_ON_NODE = (
    "exec 2>&1; "
    + MAKE_CERTIFICATE.split(" && printf")[0]
    + ' && printf \'{"rule": "%s", "violation": "suboptimal_extraction", "source": %s, "bundle": %s, '
    '"target_config": "0,1,0"}\' MaximumIndependentSetToMinimumVertexCover "$(cat source.json)" '
    '"$(cat bundle.json)" > cert.json; for i in 1 2 3 4 5 6; do pred --version; done; '
    "echo '{' > bad.json; submit bad.json; submit cert.json; sleep 60"
)


@pytest.mark.trio
@pytest.mark.parametrize("environment", ["bubblewrap", "local"])
async def test_counted_tools_and_submit_hold_for_an_agent_on_node_b(tmp_path, cluster, environment):
    """The node's tool gate asks this engine's: `pred` counted exactly (create, reduce and four
    --version granted, the last two refused), `submit` verified here (REJECTED, then ACCEPTED),
    and the accepted one stops the agent on its node (it would sleep on); the evidence is this
    engine's."""
    from benchtui.engine import preflight
    from benchtui.engine.campaign import load

    def agent(call: Call) -> Answer:
        if len(call.body["messages"]) == 1:
            return Answer(text="RUN: " + SUBMIT_ON_NODE, input_tokens=1000, output_tokens=50)
        return Answer(text="done", input_tokens=10, output_tokens=5)

    limits = {"model_calls": 5, "submits": 2, "tools": {"pred": 6}}
    with ScriptedUpstream(agent) as up:
        path = write_campaign(
            tmp_path,
            up.url,
            executor=on(cluster),
            models=("openai/scripted-a",),
            budget={"total_usd": 1.0, "per_session": limits},
            environment=environment,
        )
        campaign = load(path)
        active = campaign.profiles[campaign.runner]
        # nothing said unenforced on a cluster
        assert preflight.unenforced(active, campaign.logical_limits, remote=campaign.executor.remote) == []
        started = time.monotonic()
        with trio.fail_after(120):
            prep, _ = await run_campaign(path, tmp_path / "state")
    assert time.monotonic() - started < 55  # stopped at ACCEPTED on node_b, not after its sleep
    (record,) = journal(prep.run_dir).values()
    assert (record["state"], record["result"]) == ("done", "bug_found"), record["reason"]
    assert record["counters"] == {"model_calls": 1, "submits": 2, "tools": {"pred": 6}}
    assert "tools.pred" in record["exhausted"]
    session = prep.run_dir / "sessions" / record["session"]
    evidence = [json.loads(line) for line in (session / "evidence.jsonl").read_text().splitlines()]
    tools = [e["granted"] for e in evidence if e["kind"] == "tool"]
    assert tools == [True] * 6 + [False] * 2
    assert [e["verdict"] for e in evidence if e["kind"] == "submit"] == ["rejected", "accepted"]
    (details,) = outcome_rows(prep.run_dir)
    assert details["executor"] == "ray" and details["node"]["ip"]


@pytest.mark.trio
async def test_logical_budgets_hold_for_a_mini_session_on_node_b(tmp_path, cluster):
    """model_calls and shell_actions go through the channel to this engine's meter, submits and
    observation_chars are applied here and in the worker, and the worker's `pred` goes through
    the tool gate on its node, which asks this engine's: nothing is said unenforced."""
    from support.mini import write_campaign as mini_campaign
    from support.scripted_llm import Reply, ScriptedLLM

    from benchtui.engine import preflight
    from benchtui.engine.campaign import load

    steps = [Reply("pred --version"), Reply("pred --version"), Reply("echo three"), Reply("echo four")]
    limits = {"model_calls": 4, "shell_actions": 2, "tools": {"pred": 1}}
    with ScriptedLLM(steps) as llm:
        path = mini_campaign(
            tmp_path,
            llm.url,
            runner={"environment": "bubblewrap", "step_limit": 10},
            budget={"per_session": limits},
            executor=on(cluster),
        )
        campaign = load(path)
        active = campaign.profiles[campaign.runner]
        assert preflight.unenforced(active, campaign.logical_limits, remote=campaign.executor.remote) == []
        with trio.fail_after(180):
            prep, _ = await run_campaign(path, tmp_path / "runs")
    (record,) = journal(prep.run_dir).values()
    assert len(llm.requests) == 4 and record["exhausted"] == ["tools.pred", "shell_actions", "model_calls"]
    assert record["counters"] == {"model_calls": 4, "shell_actions": 2, "tools": {"pred": 1}}
    second, last = (str(llm.requests[i].messages[-1]["content"]) for i in (1, -1))
    assert "pred 0.5.0-stand-in" in second
    assert "budget of 1 `pred` calls is spent (counter tools.pred)" in str(
        llm.requests[2].messages[-1]["content"]
    )
    assert "budget of 2 shell actions is spent" in last
    assert record["reason"] == "model_calls: the session's 4 model calls are spent"
