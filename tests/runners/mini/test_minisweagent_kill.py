"""Kill: a killed session leaves no process behind within 2 s, and its spend stays recorded.

Three sessions each have their agent run a long `sleep`; one is killed as is, one after the
test paused its worker and command (SIGSTOP), one whose command ignores SIGTERM.
"""

from __future__ import annotations

import os
import re
import signal
import tomllib
from pathlib import Path

import pytest
import trio
from support.mini import journal, pred_on_path, price, run_campaign, write_campaign
from support.processes import pids_matching
from support.scripted_llm import Reply, ScriptedLLM

from benchtui.engine import events as ev

# Found by their command line: unique to this test process, so that a copy of this test running
# at the same time elsewhere on the machine (another checkout) is never taken for ours.
_TAG = f"{os.getpid():07d}"
SLEEPS = {
    "running": f"sleep 300.1{_TAG}",
    "paused": f"sleep 300.2{_TAG}",
    "ignores-term": f"trap '' TERM; sleep 300.3{_TAG}",
}


def alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def processes_under(root: Path) -> list[int]:
    """Processes whose working directory is inside `root` (workers and agent commands are)."""
    found = []
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                if os.readlink(f"{entry.path}/cwd").startswith(str(root)) and alive(int(entry.name)):
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


@pytest.mark.trio
async def test_killing_sessions_leaves_no_process_and_keeps_their_spend(tmp_path, monkeypatch):
    pred_on_path(tmp_path, monkeypatch)
    monkeypatch.setenv("SCRIPTED_API_KEY", "sk-test-scripted-0000")
    for sandbox in ("local", "bubblewrap"):  # one Trio run: both share the pre-warmed zygote
        await kill_three(tmp_path / sandbox, sandbox)


async def kill_three(tmp_path, sandbox):
    tmp_path.mkdir()

    def script(request):
        task = next(t for t in SLEEPS if request.mentions(f"`{t}`"))
        return Reply(SLEEPS[task], 1000, 100)

    async def kill_all(recorder):
        tasks = {e.task: e.session for e in recorder.of(ev.SessionStarted)}
        with trio.fail_after(90):  # the first session pays the zygote's imports; a loaded machine is slow
            while len(tasks) < 3 or not all(pids_matching(s.split()[-1]) for s in SLEEPS.values()):
                await trio.sleep(0.05)
                tasks = {e.task: e.session for e in recorder.of(ev.SessionStarted)}
        workers = {
            e.session: int(m.group(1))
            for e in recorder.of(ev.SessionProgress)
            if (m := re.fullmatch(r"worker (\d+) started", e.note))
        }
        for task, command in SLEEPS.items():
            session, sleeper = tasks[task], pids_matching(command.split()[-1])
            if task == "paused":
                for pid in [workers[session], *sleeper]:
                    os.kill(pid, signal.SIGSTOP)
            assert recorder.scheduler.kill(session)
            with trio.fail_after(2):  # the whole tree is gone within 2 s
                while alive(workers[session]) or pids_matching(command.split()[-1]):
                    await trio.sleep(0.01)

    with ScriptedLLM(script=script) as llm:
        path = write_campaign(
            tmp_path,
            llm.url,
            tasks=list(SLEEPS),
            parallelism=3,
            runner={"environment": sandbox, "command_timeout_s": 600},
        )
        with trio.fail_after(150):
            prep, _ = await run_campaign(path, tmp_path / "runs", during=kill_all)

    assert processes_under(tmp_path) == []
    records = journal(prep.run_dir)
    assert {r["state"] for r in records.values()} == {"killed"}
    one_call = float(price(1000, 100))
    assert all(r["cost_usd"] == one_call for r in records.values())  # the spend so far is kept
    ledger = tomllib.loads((prep.run_dir / "ledger.toml").read_text())
    assert ledger["totals"]["spent_usd"] == pytest.approx(3 * one_call)
    assert ledger["totals"]["wasted_usd"] == pytest.approx(3 * one_call)
    assert len(llm.requests) == 3
