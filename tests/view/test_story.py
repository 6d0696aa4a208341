"""The session story's readers on files as an agent or a crash may leave them: a trajectory read a
page at a time (each page costs its own size), a message too large or cut short, links and FIFOs
never followed, evidence grouped with the command it belongs to."""

from __future__ import annotations

import json
import os
from decimal import Decimal

import pytest
from support.view import SESSION

from benchtui.story import evidence, files, trajectory
from benchtui.story.run import RunStory
from benchtui.story.session import SessionStory
from benchtui.story.text import visible

TRAJ = "sessions/s/attempt-1.traj.json"


def write_trajectory(root, messages, *, cut: int | None = None):
    path = root / TRAJ
    path.parent.mkdir(parents=True, exist_ok=True)
    data = json.dumps(
        {"info": {"exit_status": "x", "config": {"messages": "a decoy"}}, "messages": messages}, indent=2
    )
    path.write_text(data[:cut] if cut else data)
    return path


def conversation(n: int, size: int = 10):
    messages = [{"role": "system", "content": "you are"}, {"role": "user", "content": "the task"}]
    for i in range(n):
        messages.append(
            {"role": "assistant", "content": f"thinking {i}", "extra": {"actions": [{"command": f"cmd {i}"}]}}
        )
        messages.append(
            {"role": "tool", "content": f"output {i} " + "x" * size, "extra": {"raw_output": f"raw {i}"}}
        )
    return messages


def all_pages(root):
    page = trajectory.read_page(root, TRAJ)
    pages = [page]
    while page.next is not None:
        page = trajectory.read_page(root, TRAJ, page.next)
        pages.append(page)
    return pages


def test_pages_follow_one_another_and_count_calls_and_actions(tmp_path, monkeypatch):
    monkeypatch.setattr(trajectory, "PAGE_BYTES", 4096)  # many pages from a small file
    messages = conversation(60, size=300)
    write_trajectory(tmp_path, messages)
    pages = all_pages(tmp_path)
    assert len(pages) > 5
    read = [e.message for p in pages for e in p.entries]
    assert read == messages  # every message once, in order
    assert pages[0].info["exit_status"] == "x"
    for page in pages[1:]:
        before = [m for p in pages[: pages.index(page)] for m in (e.message for e in p.entries)]
        assert page.cursor.index == len(before)
        assert page.cursor.calls == sum(m["role"] == "assistant" for m in before)
        assert page.cursor.actions == sum(trajectory.is_action(m) for m in before)
        assert trajectory.message_at(tmp_path, TRAJ, page.cursor.offset) == page.entries[0].message


def test_a_page_reads_its_own_share_of_a_large_trajectory(tmp_path, monkeypatch):
    write_trajectory(tmp_path, conversation(3000, size=12_000))  # ~37 MB
    read = []
    real = files.read_range

    def counting(root, relative, offset, limit):
        chunk = real(root, relative, offset, limit)
        read.append(len(chunk.data))
        return chunk

    monkeypatch.setattr(files, "read_range", counting)
    page = trajectory.read_page(tmp_path, TRAJ)
    assert page.next is not None and len(page.entries) == trajectory.PAGE_MESSAGES
    assert sum(read) <= trajectory.HEAD_BYTES + 2 * 2 * trajectory.PAGE_BYTES, read  # one window
    assert page.size > 4 * sum(read)


def test_a_message_cut_short_is_shown_raw_and_says_so(tmp_path):
    messages = conversation(3)
    path = write_trajectory(tmp_path, messages)
    whole = path.read_text()
    path.write_text(whole[: whole.index("output 2") + 3])  # mini-swe-agent rewrites it after each step
    page = trajectory.read_page(tmp_path, TRAJ)
    assert [e.message for e in page.entries[:-1]] == messages[:-1]
    assert page.entries[-1].message is None and '"role": "tool"' in page.entries[-1].raw
    assert "ends in the middle of a message" in page.problem and page.next is None


def test_a_message_larger_than_can_be_decoded_is_shown_by_its_head(tmp_path, monkeypatch):
    monkeypatch.setattr(trajectory, "MAX_MESSAGE_BYTES", 1 << 20)
    monkeypatch.setattr(trajectory, "PAGE_BYTES", 64 << 10)
    write_trajectory(tmp_path, [*conversation(1), {"role": "tool", "content": "y" * (3 << 20)}])
    page = trajectory.read_page(tmp_path, TRAJ)
    assert len(page.entries) == 4  # the four that fit
    page = trajectory.read_page(tmp_path, TRAJ, page.next)
    (entry,) = page.entries
    assert entry.message is None and len(entry.raw) == trajectory.RAW_HEAD
    assert "larger" not in page.problem and "cannot decode" in page.problem and page.next is None


def test_links_and_fifos_are_never_read(tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("the host's secret")
    (tmp_path / "sessions" / "s").mkdir(parents=True)
    (tmp_path / TRAJ).symlink_to(secret)
    with pytest.raises(files.Unreadable, match="symbolic link"):
        trajectory.read_page(tmp_path, TRAJ)
    os.mkfifo(tmp_path / "sessions" / "s" / "evidence.jsonl")
    ledger = evidence.read(tmp_path, "s", 1)  # a FIFO: refused at once, never waited on
    assert ledger is not None and "not a regular file" in ledger.problem
    (tmp_path / "sessions" / "t").symlink_to(tmp_path / "sessions" / "s")  # a linked session folder
    with pytest.raises(files.Unreadable):
        files.read_range(tmp_path, "sessions/t/attempt-1.traj.json", 0, 100)


def test_gated_calls_and_submits_belong_to_the_command_that_made_them(tmp_path):
    lines = [
        {"kind": "generation", "attempt": 1, "n": 1, "input_tokens": 5, "cost_usd": "0.1", "charged": True},
        {
            "kind": "tool",
            "attempt": 1,
            "argv": ["pred", "solve"],
            "granted": True,
            "counters": ["tools.pred"],
        },
        {"kind": "submit", "attempt": 1, "file": "c.json", "verdict": "rejected", "reason": "no"},
        {"kind": "action", "attempt": 1, "n": 1, "command": "pred solve; submit c.json"},
        {"kind": "action", "attempt": 2, "n": 1, "command": "another attempt's"},
        {"kind": "submit", "attempt": 1, "via": "printed block", "verdict": "admitted"},
    ]
    (tmp_path / "sessions" / "s").mkdir(parents=True)
    text = "\n".join(json.dumps(line) for line in lines) + '\n{"torn'
    (tmp_path / "sessions" / "s" / evidence.FILE).write_text(text)
    ledger = evidence.read(tmp_path, "s", 1)
    (action,) = ledger.actions
    assert [t.argv for t in action.tools] == [["pred", "solve"]]
    assert [(s.file, s.verdict) for s in action.submits] == [("c.json", "rejected")]
    assert [s.via for s in ledger.loose] == ["printed block"]
    assert [g.input_tokens for g in ledger.generations] == [5]


def test_control_and_bidi_characters_are_shown_not_obeyed():
    shown = visible("red \x1b[31mtext\x1b[0m\r\n‮evil‬ tab\tnew\nline\x00")
    assert "\x1b" not in shown and "\u202e" not in shown and "\x00" not in shown and "\r" not in shown
    assert "␛[31m" in shown and "⟨U+202E⟩" in shown and "\t" in shown and "\nline" in shown


def test_the_story_of_a_real_session(mini_run):
    run = RunStory(mini_run)
    story = SessionStory(run, run.session(SESSION))
    timeline = story.timeline(1)
    kinds = [s.kind for s in timeline.steps]
    assert kinds == ["prompt", "prompt", "answer", "output", "answer", "output", "answer", "output", "exit"]
    outputs = [s for s in timeline.steps if s.kind == "output"]
    assert "Wrote source.json" in outputs[0].text and outputs[0].action.tools
    assert [s.verdict for o in outputs for s in o.action.submits] == ["rejected", "accepted"]
    calls = [s.call for s in timeline.steps if s.kind == "answer"]
    assert all(c is not None and c.charged for c in calls)
    assert all(Decimal(c.hold_usd) >= Decimal(c.cost_usd) > 0 for c in calls)  # the hold, then the charge
    judged, problem = story.judged(1)
    assert not problem and [j.verdict.status for j in judged] == ["rejected", "accepted"]
    assert judged[1].verdict.findings["found_by"] == "brute-force"
    (attempt,) = story.attempts()
    assert attempt.details.prompt_sha256 and attempt.details.environment and "calls 3/10" in attempt.budget
