"""A hostile agent behind the command runner, as a bash script in bubblewrap: it attacks the other
sessions, the lifeline that ties its sandbox to the engine, and the files the runner collects."""

from __future__ import annotations

import os
import signal
import time

import pytest
import trio
from support import popen
from support.mini import journal, pred_on_path, price, run_campaign
from support.script_agent import agent_log, pids_matching, script_campaign
from support.scripted_upstream import Answer, ScriptedUpstream

REAL_KEY = "sk-real-scripted-key-77c1"


@pytest.fixture(autouse=True)
def _env(tmp_path, monkeypatch):
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
