"""The benchmark's protocol inside a real mini-swe-agent session (bubblewrap, the scripted model
server, the stand-in pred): `submit FILE` answers at once and an accepted one ends the session,
every observation starts with the budget line, free calls take no unit, each step is evidence."""

from __future__ import annotations

import json
import os
import stat

import pytest
import trio
from support.mini import RULE, journal, pred_on_path, run_campaign, write_campaign
from support.scripted_llm import Reply, ScriptedLLM

from benchtui.core.errors import BadInput
from benchtui.engine import run as engine
from benchtui.report.audit import audit
from benchtui.report.runs import read_run

CERTIFICATE_FILE = (
    'printf \'{"rule": "' + RULE + '", "violation": "suboptimal_extraction", '
    '"source": %s, "bundle": %s, "target_config": "0,1,0"}\' '
    '"$(cat source.json)" "$(cat bundle.json)" > cert.json'
)
PROTOCOL = {
    "model_calls": 10,
    "shell_actions": 12,
    "submits": 2,
    "observation_chars": 10000,
    "tools": {"pred": 24, "pred solve": 10},
    "free": ["pred --help", "pred --version", "pred list"],
}
STEPS = [
    Reply(
        "pred --help >/dev/null; pred --version; pred --version; "
        "pred create MIS --graph 0-1,1-2 -o source.json && "
        "pred reduce source.json --to MinimumVertexCover --json > bundle.json"
    ),
    Reply("echo '{not json' > bad.json; submit bad.json"),
    Reply(f"{CERTIFICATE_FILE} && submit cert.json"),
    Reply("echo never-run"),  # the session ended on ACCEPTED: never asked for
]


@pytest.fixture(autouse=True)
def _env(monkeypatch):
    monkeypatch.setenv("SCRIPTED_API_KEY", "sk-test-scripted-0000")


def observations(llm: ScriptedLLM) -> list[str]:
    return [str(m["content"]) for m in llm.requests[-1].messages[2:] if m["role"] != "assistant"]


def output(observation: str) -> str:
    return observation.split("<output>\n", 1)[1]


@pytest.mark.trio
async def test_submit_answers_at_once_and_an_accepted_one_ends_the_session(tmp_path, monkeypatch):
    pred_on_path(tmp_path, monkeypatch)
    with ScriptedLLM(STEPS) as llm:
        path = write_campaign(
            tmp_path, llm.url, runner={"environment": "bubblewrap"}, budget={"per_session": PROTOCOL}
        )
        with trio.fail_after(90):
            prep, _ = await run_campaign(path, tmp_path / "runs")
    (end,) = journal(prep.run_dir).values()
    assert len(llm.requests) == 3  # ended after ACCEPTED: the fourth reply was never asked for
    seen = observations(llm)
    assert all(o.startswith("[budget] calls ") for o in seen), seen
    assert seen[0].startswith("[budget] calls 1/10  actions 1/12  pred 2/24  pred solve 0/10  submits 0/2")
    assert output(seen[0]).count("pred 0.5.0-stand-in") == 2  # free, cached: the same answer
    rejected = output(seen[1]).splitlines()
    assert rejected[0] == "REJECTED" and "malformed certificate" in rejected[1]
    assert rejected[2] == "attempts left: 1" and rejected[3].startswith("[budget] ")
    assert "submits 1/2" in rejected[3]  # the malformed one took its unit
    assert end["result"] == "bug_found" and end["state"] == "done"
    session = prep.run_dir / "sessions" / end["session"]
    trajectory = json.loads((session / "attempt-1.traj.json").read_text())
    last = [m for m in trajectory["messages"] if m["role"] == "tool"][-1]["content"]
    assert last.startswith("[budget] calls 3/10  actions 3/12  pred 2/24  pred solve 0/10  submits 2/2")
    accepted = output(last).splitlines()  # the session ended there: no fourth model call
    assert accepted[0] == "ACCEPTED" and accepted[2] == "attempts left: 0"
    assert end["counters"] == {
        "model_calls": 3,
        "shell_actions": 3,
        "submits": 2,
        "tools": {"pred": 2, "pred solve": 0},  # --help and --version took none
    }
    checked = json.loads((session / "attempt-1.certificates.json").read_text())
    assert [c["verdict"]["status"] for c in checked] == ["rejected", "accepted"]
    evidence = [json.loads(line) for line in (session / "evidence.jsonl").read_text().splitlines()]
    kinds = [e["kind"] for e in evidence]
    assert kinds.count("generation") == 3 and kinds.count("action") == 3 and kinds.count("submit") == 2
    tools = [e for e in evidence if e["kind"] == "tool"]
    assert [(t["argv"][1], t["free"]) for t in tools] == [
        ("--help", True),
        ("--version", True),
        ("--version", True),
        ("create", False),
        ("reduce", False),
    ]
    assert [t.get("cached") for t in tools[:3]] == [False, False, True]
    assert len({t["request"] for t in tools}) == 5
    submits = [e for e in evidence if e["kind"] == "submit"]
    assert [s["verdict"] for s in submits] == ["rejected", "accepted"]
    assert all(len(s["sha256"]) == 64 for s in submits)
    actions = [e for e in evidence if e["kind"] == "action"]
    assert actions[1]["command"].endswith("submit bad.json") and actions[1]["exit"] == 1
    assert all(a["shown_chars"] > 0 and a["duration_s"] >= 0 for a in actions)
    generations = [e for e in evidence if e["kind"] == "generation"]
    assert all(g["charged"] and g["input_tokens"] > 0 for g in generations)
    assert [a["unit"] for a in actions] == [True, True, True]

    # The audit reads the ledger: as written, nothing to report; a counter above its evidence
    # (one granted `pred` call's record gone) is a finding.
    assert not [f for f in audit([read_run(prep.run_dir)]).findings if f.startswith("evidence")]
    lines = (session / "evidence.jsonl").read_text().splitlines(keepends=True)
    kept = [line for line in lines if '"reduce"' not in line]
    (session / "evidence.jsonl").write_text("".join(kept))
    found = [f for f in audit([read_run(prep.run_dir)]).findings if f.startswith("evidence")]
    assert found == [
        f'evidence: session {end["session"]}: tools.pred counted 2 but its evidence shows 1 ("evidence.jsonl")'
    ]


@pytest.mark.trio
async def test_keep_hunting_goes_on_after_an_accepted_submit(tmp_path, monkeypatch):
    pred_on_path(tmp_path, monkeypatch)
    steps = [
        STEPS[0],
        STEPS[2],
        Reply("echo still-hunting"),
        Reply("echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"),
    ]
    with ScriptedLLM(steps) as llm:
        path = write_campaign(
            tmp_path,
            llm.url,
            runner={"environment": "bubblewrap"},
            budget={"per_session": {**PROTOCOL, "keep_hunting": True}},
        )
        with trio.fail_after(90):
            prep, _ = await run_campaign(path, tmp_path / "runs")
    (end,) = journal(prep.run_dir).values()
    assert len(llm.requests) == 4 and "still-hunting" in observations(llm)[2]
    assert end["result"] == "bug_found" and end["counters"]["submits"] == 1


@pytest.mark.trio
@pytest.mark.parametrize("counted", [True, False])
async def test_an_agent_cannot_keep_or_copy_a_granted_tool(tmp_path, monkeypatch, counted):
    """While a granted pred runs, the agent looks for it everywhere it could: its processes
    (/proc/*/cmdline, /proc/*/exe, /proc/*/fd), descriptors passed to it, the file system. Nothing
    to find: the gate runs the tool in a sandbox of its own; a stolen copy would have run
    uncounted. (The control: an uncounted pred runs in the agent's sandbox, and the same search
    finds its process and its file; /proc/1, bwrap itself, no longer names it: bwrap reads the
    options that bind it from a pipe.)

    The search runs while pred is certainly alive, whatever the machine's load: pred reads its
    input from a pipe whose writing end the agent holds open until it has searched (it has read
    past the pipe's buffer before the search starts: it runs), then solves when given the rest.
    (A solve timed to outlast a `sleep 1` and the search finished first in about one run in three,
    and the control's expected sighting of its own pred was then reported as the counted case's.)"""
    pred_on_path(tmp_path, monkeypatch)
    hunt = (
        "pred create MIS --graph 0-1,1-2 -o small.json 2>/dev/null; mkfifo /tmp/in; "
        "(pred solve - --solver brute-force < /tmp/in > solved.txt 2>&1 &); exec 3>/tmp/in; rm /tmp/in; "
        # More than the pipe holds: this returns only once pred has read (leading blanks of its JSON).
        "head -c 200000 /dev/zero | tr '\\0' ' ' >&3; echo fed; "
        "S=stand_in; B=benchtui; M='STAND-IN for'; found=0; for p in /proc/[0-9]*; do "
        '  grep -qaE "${S}_pred|$B/bin/pred" $p/cmdline 2>/dev/null && found=$((found+1)) && echo hit-cmd $p; '
        '  for f in $p/exe $p/fd/*; do [ -f $f ] && head -c 4096 $f 2>/dev/null | grep -qa "$M problem-reductions" '
        "    && found=$((found+1)) && echo hit-fd $f; done; "
        "done; echo found=$found; "
        'grep -rlsa "$M problem-reductions" /opt /tmp /run /dev/shm . 2>/dev/null | head -3; '
        "test -s solved.txt || echo still-running; echo searched; "
        # The rest of pred's input: the call it was in all along answers.
        "cat small.json >&3; exec 3>&-; for i in $(seq 300); do grep -q evaluation solved.txt && break; "
        "sleep 0.1; done; grep -o 'Max([0-9]*)' solved.txt"
    )
    steps = [Reply(hunt), Reply("echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT")]
    with ScriptedLLM(steps) as llm:
        path = write_campaign(
            tmp_path,
            llm.url,
            runner={"environment": "bubblewrap", "command_timeout_s": 60},
            budget={"per_session": {"tools": {"pred": 5}} if counted else {"shell_actions": 5}},
        )
        with trio.fail_after(120):
            prep, _ = await run_campaign(path, tmp_path / "runs")
    seen = output(observations(llm)[0])
    case = f"counted={counted}: {seen}"
    # Searched while pred ran (fed, not finished), and that very call then answered.
    assert "fed" in seen and "still-running" in seen and "searched" in seen, case
    assert "Max(2)" in seen.split("searched", 1)[1], case
    if not counted:  # the same search finds an uncounted pred: its process and its file
        assert "found=0" not in seen and "/opt/benchtui/bin/pred" in seen, case
        # pred's own process; not bwrap (PID 1 in the sandbox): its options came through a pipe.
        assert "hit-cmd /proc/1\n" not in seen and seen.count("hit-cmd /proc/") >= 1, case
        return
    assert "found=0" in seen and "stand_in" not in seen and "/opt/benchtui" not in seen, case
    (end,) = journal(prep.run_dir).values()
    assert end["counters"]["tools"]["pred"] == 2


def test_a_counted_tool_the_sandbox_shows_is_refused_when_the_campaign_loads(tmp_path):
    """`ls = 1` with ls in /usr/bin: the agent would run /usr/bin/ls directly (exit 2, named)."""
    path = write_campaign(
        tmp_path,
        "http://127.0.0.1:9/v1",
        runner={"environment": "bubblewrap", "pred": "/usr/bin/env"},
        budget={"per_session": {"tools": {"ls": 1}}},
    )
    with pytest.raises(
        BadInput, match=r"counted tool ls: `ls` is counted but the sandbox shows it at /usr/bin/ls"
    ):
        engine.prepare(engine.Options(path, tmp_path / "runs"))
    assert not (tmp_path / "runs").exists()


def test_a_saved_full_output_is_read_only_in_the_session_copy(tmp_path):
    from benchtui.runners.kit import observation

    outputs = observation.SavedOutputs(tmp_path, "/workspace")
    view = observation.shape("line\n" * 10 + "x" * 50_000 + "\nerror: here\n", 1000, outputs, "a.txt")
    assert view.cut and view.saved == "/workspace/.benchtui-outputs/a.txt"
    saved = tmp_path / observation.SAVED_DIR / "a.txt"
    assert not os.stat(saved).st_mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH)
    assert saved.read_text().count("x") == 50_000
