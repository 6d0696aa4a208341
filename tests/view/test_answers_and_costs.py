"""The viewer shows every model answer — those that failed the format check too (mini-swe-agent
keeps them in the feedback message's `extra.response`) — and a session's costs agree between its
header and its attempt rows, also after a kill -9 and a `--resume` that then skips it."""

from __future__ import annotations

import json
import signal
import time
from decimal import Decimal

from support import benchtui, last_states, popen, write_campaign

from benchtui.story import evidence, session, trajectory
from benchtui.story.run import RunStory
from benchtui.story.session import SessionStory

TRAJ = "sessions/s/attempt-1.traj.json"


def rejected(text: str, feedback: str) -> dict:
    """A format error's feedback message as mini-swe-agent writes it: the answer in `response`."""
    response = {"choices": [{"message": {"role": "assistant", "content": text, "tool_calls": None}}]}
    return {"role": "user", "content": feedback, "extra": {"response": response, "cost": 0.0}}


def test_answers_that_failed_the_format_check_are_shown_with_their_calls(tmp_path):
    answers = ["I think we should look at the code.", "Sure! Here is the plan.", "Done, I believe."]
    messages = [{"role": "system", "content": "you are"}, {"role": "user", "content": "the task"}]
    messages += [rejected(a, "Please always provide EXACTLY ONE action") for a in answers]
    messages.append({"role": "exit", "content": "RepeatedFormatError", "extra": {"exit_status": "x"}})
    path = tmp_path / TRAJ
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"info": {}, "messages": messages}))
    lines = [
        {
            "kind": "generation",
            "attempt": 1,
            "n": n,
            "input_tokens": 50,
            "output_tokens": 9,
            "cost_usd": "0.0001",
        }
        for n in (1, 2, 3)
    ]
    (path.parent / evidence.FILE).write_text("".join(json.dumps(line) + "\n" for line in lines))
    timeline = session._assemble(
        trajectory.read_page(tmp_path, TRAJ), evidence.read(tmp_path, "s", 1), lambda action: ""
    )
    shown = [s for s in timeline.steps if s.kind == "answer"]
    assert [s.text for s in shown] == answers  # what the model said, not only the feedback
    assert all("EXACTLY ONE action" in s.feedback for s in shown)
    assert [s.call.n for s in shown] == [1, 2, 3]  # each with the call that produced it
    assert timeline.unanswered == []  # no "model call with no answer": each call had one


def wait_for(predicate, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def running(run) -> bool:
    journal = run / "sessions.jsonl"
    return journal.exists() and any(r["state"] == "running" for r in last_states(run).values())


def test_after_a_kill_9_and_a_resume_that_skips_it_header_and_attempt_rows_agree(tmp_path):
    """The only attempt ran when benchtui was killed: --resume charges it as wasted and says so by
    name; the budget then no longer fits the session, so it is skipped — a line of its own, never
    that attempt's end: the attempt row keeps its charge, which is the header's."""
    write_campaign(
        tmp_path,
        sessions=1,
        models=("fake/model-a",),
        total="0.03",
        per_session="0.03",
        latency=600,
        parallelism=1,
    )
    run = tmp_path / "runs/t"
    proc = popen("t.toml", "--no-ui", cwd=tmp_path)
    try:
        wait_for(lambda: running(run))
        time.sleep(0.5)  # its hold is journaled before the call
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    resumed = benchtui("t.toml", "--no-ui", "--resume", cwd=tmp_path)
    said = resumed.stdout + resumed.stderr
    assert "interrupted: 1 attempt ran when benchtui stopped, charged $0.0300 as wasted" in said, said
    assert "fake_model-a-0000 attempt 1 ($0.0300)" in said, said
    assert last_states(run)["fake_model-a-0000"]["state"] == "skipped_budget"

    story = RunStory(run)
    row = story.session("fake_model-a-0000")
    (attempt,) = SessionStory(story, row).attempts()
    assert (
        attempt.end is not None
        and attempt.end.state == "error"
        and attempt.end.reason.startswith("interrupted")
    )
    assert attempt.then_skipped is not None and not attempt.retried
    assert attempt.end.cost_usd == row.cost_usd == Decimal("0.03")

    out = tmp_path / "export"
    exported = benchtui("view", str(run), "--export", str(out), cwd=tmp_path)
    assert exported.returncode == 0, exported.stderr
    (page,) = out.rglob("sessions/fake_model-a-0000/index.html")
    html = page.read_text()
    assert "cost $0.0300 over 1 attempt" in html
    table = html.split('<table id="attempts">', 1)[1].split("</table>", 1)[0]
    assert "<td>$0.0300</td>" in table and "not run again: budget" in table, table
