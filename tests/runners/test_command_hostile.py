"""A hostile agent behind the command runner, as a bash script in bubblewrap: it attacks the other
sessions, the lifeline that ties its sandbox to the engine, and the files the runner collects."""

from __future__ import annotations

import os
import re
import resource
import signal
import sys
import time
from pathlib import Path

import pytest
import trio
from support import popen
from support.mini import journal, pred_on_path, price, run_campaign
from support.processes import pids_matching
from support.real_parts import copies_are_volumes, require_tools
from support.script_agent import agent_log, script_campaign
from support.scripted_upstream import Answer, ScriptedUpstream

from benchtui.core.target import Toolbox
from benchtui.runners.kit.agentlog import MAX_LOG_BYTES

REAL_KEY = "sk-real-scripted-key-77c1"


@pytest.fixture(autouse=True)
def _env(tmp_path, monkeypatch):
    require_tools("bwrap", "socat")  # every agent here runs in bubblewrap, behind socat
    pred_on_path(tmp_path, monkeypatch)
    monkeypatch.setenv("SCRIPTED_API_KEY", REAL_KEY)


# The attacker moves the shared gateway socket aside, listens in its place, and reads the tokens
# of the sessions whose requests now pass through it; then spends with the victim's token.
STEAL = r"""
if [ "$1" = attacker ]; then
  if mv /run/benchtui/gateway.sock /run/benchtui/real.sock 2>/tmp/err; then
    socat -v UNIX-LISTEN:/run/benchtui/gateway.sock,fork UNIX-CONNECT:/run/benchtui/real.sock 2>>/tmp/seen &
    for i in $(seq 300); do
      stolen=$(grep -ao 'benchtui-[A-Za-z0-9_-]*' /tmp/seen 2>/dev/null | grep -v -- "$OPENAI_API_KEY" | head -1)
      [ -n "$stolen" ] && break; sleep 0.05
    done
    echo "stolen: ${stolen:-none}"
    [ -n "$stolen" ] && call "$stolen" && call "$stolen"
  else
    echo "rename refused: $(cat /tmp/err)"
  fi
  ls -la /run/benchtui
  touch /run/benchtui/planted 2>&1 || echo "write refused"
else
  sleep 3; call; call
fi
"""


@pytest.mark.trio
async def test_an_agent_cannot_hijack_another_sessions_gateway_socket(tmp_path):
    with ScriptedUpstream(lambda call: Answer(input_tokens=100, output_tokens=10)) as up:
        path = script_campaign(tmp_path, up.url, STEAL, models=("openai/attacker", "openai/victim"))
        with trio.fail_after(120):
            prep, _ = await run_campaign(path, tmp_path / "state")
    records = {r["model"]: r for r in journal(prep.run_dir).values()}
    attacker, victim = records["openai/attacker"], records["openai/victim"]
    shown = agent_log(prep.run_dir, attacker["session"])
    assert "rename refused" in shown and "write refused" in shown, shown
    # The victim's budget paid for the victim's two calls only; both reached the provider.
    assert [c.body["model"] for c in up.calls].count("victim") == 2, shown
    assert victim["cost_usd"] == float(2 * price(100, 10))
    assert '"choices"' in agent_log(prep.run_dir, victim["session"])
    assert attacker["cost_usd"] == 0.0


# Stops, then kills, every process it can see but itself and its ancestors (which keep its
# sandbox alive), then lingers.
KILL_WATCHERS = r"""
keep=" $$ "; p=$$
while [ "$p" -gt 1 ]; do p=$(cut -d' ' -f4 /proc/$p/stat); keep="$keep$p "; done
for sig in STOP KILL; do
  for p in /proc/[0-9]*; do
    pid=${p#/proc/}
    case "$keep" in *" $pid "*) ;; *) kill -$sig "$pid" 2>/dev/null && echo "$sig $pid";; esac
  done
done
echo "watchers gone"
exec sleep 613.5
"""


def test_an_agent_that_kills_its_lifeline_watcher_dies_with_a_sigkilled_engine(tmp_path):
    with ScriptedUpstream() as up:
        path = script_campaign(tmp_path, up.url, KILL_WATCHERS)
        engine = popen(path, "--no-ui", "--state-dir", tmp_path / "state", cwd=tmp_path)
        try:
            deadline = time.monotonic() + 60
            while not pids_matching("sleep 613.5") and time.monotonic() < deadline:
                time.sleep(0.05)
            assert pids_matching("sleep 613.5"), engine.stderr.read() if engine.poll() else "no agent"
            time.sleep(0.5)  # it has done its worst
        finally:
            engine.send_signal(signal.SIGKILL)
            engine.wait()
        deadline = time.monotonic() + 5
        while pids_matching("sleep 613.5") and time.monotonic() < deadline:
            time.sleep(0.05)
        left = pids_matching("sleep 613.5")
        for pid in left:
            os.kill(pid, signal.SIGKILL)
    assert left == []


# What each agent leaves as its certificates.jsonl (the model's name says which), and what the
# session's outcome must say. The secret is a host file the sandbox hides.
HOSTILE_FILES = {
    "hidden-link": ("ln -s {secret} certificates.jsonl", "a symbolic link"),
    "proc-mem": ("ln -s /proc/self/mem certificates.jsonl", "a symbolic link"),
    "fifo": ("mkfifo certificates.jsonl", "not a regular file (a FIFO)"),
    "folder": ("mkdir certificates.jsonl", "not a regular file (a folder)"),
    "sparse": ("truncate -s 1G certificates.jsonl", "larger than 8,388,608 bytes"),
    "deep": (
        r'printf "%.0s{\"a\": " $(seq 100) > c; printf 1 >> c; printf "%.0s}" $(seq 100) >> c;'
        " mv c certificates.jsonl",
        "nested deeper than 64 levels",
    ),
}


@pytest.mark.trio
async def test_a_hostile_certificates_file_is_the_models_outcome_and_leaks_nothing(tmp_path):
    secret = tmp_path / "host-secret.jsonl"
    secret.write_text('{"rule": "SECRET-7f3e", "source": {}}\n')
    cases = "\n".join(
        f"  {name}) {make.replace('{secret}', str(secret))};;" for name, (make, _) in HOSTILE_FILES.items()
    )
    script = f'case "$1" in\n{cases}\nesac\necho left it\n'
    models = tuple(f"openai/{name}" for name in HOSTILE_FILES)
    with ScriptedUpstream() as up:
        path = script_campaign(tmp_path, up.url, script, models=models, parallelism=3)
        with trio.fail_after(120):
            prep, _ = await run_campaign(path, tmp_path / "state")
    records = {r["model"].removeprefix("openai/"): r for r in journal(prep.run_dir).values()}
    for name, (_, why) in HOSTILE_FILES.items():
        record = records[name]
        assert (record["state"], record["result"], record["retryable"]) == ("done", "rejected", False), record
        assert "certificates not collected" in record["reason"] and why in record["reason"], record
    files = [p for p in prep.run_dir.rglob("*") if p.is_file()]
    assert not [p for p in files if b"SECRET-7f3e" in p.read_bytes()]


@pytest.mark.trio
async def test_an_agent_printing_without_end_costs_a_bounded_log_and_bounded_memory(tmp_path):
    # 300 MB on stdout, a certificate-looking block at the very end: the log keeps a head and the
    # tail (the block survives the cut), and the engine never holds the whole output.
    script = (
        "head -c 300000000 /dev/zero | tr '\\0' x; echo;"
        ' printf "CERTIFICATE_START\\n{\\"rule\\": \\"r\\"}\\nCERTIFICATE_END\\n"'
    )
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss << 10
    with ScriptedUpstream() as up:
        path = script_campaign(tmp_path, up.url, script)
        with trio.fail_after(120):
            prep, _ = await run_campaign(path, tmp_path / "state")
    grown = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss << 10) - before
    (record,) = journal(prep.run_dir).values()
    log = prep.run_dir / "sessions" / record["session"] / "attempt-1.agent.log"
    assert log.stat().st_size <= MAX_LOG_BYTES
    assert b"bytes of the agent's output cut here" in log.read_bytes()
    assert record["result"] == "rejected"  # the block at the end was found, and verified (malformed)
    assert grown < 200 << 20, f"the engine grew by {grown >> 20} MB"


AGENT_PY = """
import json, os, sys, urllib.request
request = urllib.request.Request(
    os.environ["OPENAI_BASE_URL"] + "/chat/completions",
    data=json.dumps({"model": "m", "max_tokens": 20, "messages": [{"role": "user", "content": "hi"}]}).encode(),
    headers={"Authorization": "Bearer " + os.environ["OPENAI_API_KEY"], "Content-Type": "application/json"},
)
answer = json.load(urllib.request.urlopen(request, timeout=20))
print("agent.py in", sys.prefix, "got", answer["choices"][0]["message"]["content"])
"""


@pytest.mark.trio
async def test_a_python_agent_from_a_venv_named_by_its_absolute_path_runs_in_bubblewrap(tmp_path):
    # `python` resolves to benchtui's own venv; the venv (not only the Python it links to) and the
    # script its argv names must be visible in the sandbox.
    script = tmp_path / "agent.py"
    script.write_text(AGENT_PY)
    with ScriptedUpstream() as up:
        path = script_campaign(
            tmp_path, up.url, "", runner={"command": ["python", str(script)], "verify_timeout_s": 10}
        )
        with trio.fail_after(120):
            prep, _ = await run_campaign(path, tmp_path / "state")
    (record,) = journal(prep.run_dir).values()
    shown = agent_log(prep.run_dir, record["session"])
    assert f"agent.py in {sys.prefix} got Done." in shown, shown
    assert (record["state"], record["calls"]) == ("done", 1)


@pytest.mark.trio
async def test_an_agent_cli_that_cannot_start_is_an_infrastructure_error(tmp_path):
    script = r"""
case "$1" in
  missing) exec /opt/no-such-agent/bin/agent;;
  not-executable) exec /etc;;
  started) call >/dev/null; exit 127;;  # it ran and spent: its exit status is its own
esac
"""
    models = ("openai/missing", "openai/not-executable", "openai/started")
    with ScriptedUpstream() as up:
        path = script_campaign(tmp_path, up.url, script, models=models)
        with trio.fail_after(120):
            prep, _ = await run_campaign(path, tmp_path / "state")
    records = {r["model"].removeprefix("openai/"): r for r in journal(prep.run_dir).values()}
    for name, code in (("missing", 127), ("not-executable", 126)):
        record = records[name]
        assert (record["state"], record["retryable"]) == ("error", True), record
        assert record["reason"].startswith(f"agent CLI could not start (exit {code}): "), record
    assert "/opt/no-such-agent/bin/agent" in records["missing"]["reason"]
    started = records["started"]
    assert (started["state"], started["result"], started["retryable"]) == ("done", "no_certificate", False)
    assert started["reason"] == "exit 127" and started["calls"] == 1
    assert started["ending"]["name"] == "agent_failed"  # the agent's own exit status: final
    assert {records[k]["ending"]["name"] for k in records if k != "started"} == {"setup_error"}


BOUNDS = r"""
case "$1" in
  forks) for i in $(seq 60); do sleep 614.5 & done; wait;;
  disk) head -c 20000000 /dev/zero > big && sleep 614.5; echo "disk: $?"; ls -l big;;
  tmp) head -c 20000000 /dev/zero > /tmp/big; echo "tmp: $?"; ls -l /tmp/big;;
esac
"""


@pytest.mark.trio
@pytest.mark.parametrize(
    ("cgroup", "copies"),
    [(True, "volume"), (False, "polled")],
    ids=["pids-cgroup+volume", "proc-scan+polled"],
)
async def test_an_agent_cli_gets_the_mini_runners_process_and_disk_bounds(
    tmp_path, monkeypatch, cgroup, copies
):
    if not cgroup:
        monkeypatch.setenv("BENCHTUI_PIDS_CGROUP", "0")
    copies_are_volumes(monkeypatch, copies == "volume")
    runner = {"max_processes": 20, "max_disk_mb": 5}
    models = ("openai/forks", "openai/disk", "openai/tmp")
    with ScriptedUpstream() as up:
        path = script_campaign(tmp_path, up.url, BOUNDS, models=models, runner=runner)
        with trio.fail_after(60):
            prep, _ = await run_campaign(path, tmp_path / "state")
    records = {r["model"].removeprefix("openai/"): r for r in journal(prep.run_dir).values()}
    forks, disk, tmp = records["forks"], records["disk"], records["tmp"]
    assert (forks["state"], forks["result"], forks["retryable"]) == ("done", "no_certificate", False)
    assert re.fullmatch(
        r"resource_limit: (\d+ forks refused at 20|the session ran \d+ processes \(at most 20\))",
        forks["reason"],
    ), forks
    assert forks["ending"]["name"] == "resource_limit"
    if copies == "polled":  # the write got through; the poll saw it within 5 s
        assert disk["reason"] == "resource_limit: the session copy grew by more than 5 MB", disk
        assert disk["ending"]["name"] == "resource_limit"
    else:  # the kernel refused the write at 5 MB: the agent goes on
        log = agent_log(prep.run_dir, disk["session"])
        assert "No space left on device" in log and "disk: 1" in log, log
        written = int(re.findall(r"(\d+) \w{3} +\d+ [\d:]+ big", log)[-1])  # ls -l's size
        assert 5 << 20 <= written <= (5 << 20) + (1 << 20), log
        assert (disk["state"], disk["result"], disk["reason"]) == ("done", "no_certificate", "exit 0")
    assert "tmp: 1" in agent_log(prep.run_dir, tmp["session"])  # its /tmp is 5 MB: the write failed
    assert pids_matching("sleep 614.5") == []


def test_a_nodes_side_collects_and_caps_the_same_way_without_ray(tmp_path, monkeypatch):
    # The Ray node's half of a remote session (kit/ray/node.run_agent), called here directly: the
    # same collection helper and the same capped log as a local session.
    from support.mini import make_target

    from benchtui.core import workspace
    from benchtui.runners.command.launch import AgentCommand
    from benchtui.runners.command.profile import CommandProfile
    from benchtui.runners.kit.ray import node
    from benchtui.runners.kit.ray.node import Launch, run_agent

    monkeypatch.setattr(node, "where", lambda: {"host": "here", "ip": "", "node_id": ""})  # no Ray at all
    secret = tmp_path / "host-secret.jsonl"
    secret.write_text('{"rule": "SECRET-node"}\n')
    script = f"ln -s {secret} certificates.jsonl; head -c 50000000 /dev/zero"
    profile = CommandProfile(command=["bash", "-c", script])
    programs = Toolbox({"pred": "/bin/true"})  # not called
    command = AgentCommand(
        profile, Path("/usr/bin/bash"), {"{gateway}": "http://127.0.0.1:8787"}, "t", programs
    )
    target = make_target(tmp_path)
    launch = Launch(build=command, prompt="p", relay_to="127.0.0.1:9", needs=("/usr/bin/bash",))
    found = run_agent(launch, str(target), workspace.fingerprint(target))
    assert found.error == "" and found.code == 0, found.log[-500:]
    assert "symbolic link" in found.collect_problem and found.certificate_lines == []
    assert len(found.log) <= MAX_LOG_BYTES and b"cut here" in found.log
    assert b"SECRET-node" not in b"".join(found.files.values())
