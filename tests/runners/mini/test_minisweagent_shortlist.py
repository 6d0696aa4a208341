"""The shortlist protocol with the real mini-swe-agent loop against a scripted model, in
bubblewrap: the triage sees the source and no `pred`, commits `shortlist.json`; the episodes
hunt in shortlist order with `pred`; SIGKILL in the triage and in an episode, then `--resume`,
re-run and re-charge nothing finished; the report gives bugs@K."""

from __future__ import annotations

import json
import signal
import threading
import time
import tomllib

import pytest
import tomli_w
from support import benchtui, check_accounts, check_reconciled, journal, last_states, popen
from support.mini import pred_on_path, write_campaign
from support.scripted_llm import SUBMIT, Reply, ScriptedLLM

BUGGY = "MaximumIndependentSet/SimpleGraph/i32 -> MinimumVertexCover/SimpleGraph/i32"
SOUND = "MaximumIndependentSet/SimpleGraph/One -> MaximumClique/SimpleGraph/One"
COMMIT = json.dumps(
    [
        {"rule": BUGGY, "hypothesis": "extraction may copy a vertex instead of complementing it"},
        {"rule": "Nonsense -> Rule", "hypothesis": "not in the inventory"},
        {"rule": BUGGY, "hypothesis": "twice"},
        {"rule": SOUND, "hypothesis": "complement graph edge cases"},
    ]
)
TRIAGE = [
    Reply("command -v pred || echo NO-PRED-IN-TRIAGE; ls src/rules"),
    Reply(f"cat > shortlist.json <<'EOF'\n{COMMIT}\nEOF"),
    Reply(SUBMIT),
]
FIND_BUG = [
    Reply(
        "pred create MIS --graph 0-1,1-2 -o source.json && "
        "pred reduce source.json --to MinimumVertexCover --json > bundle.json"
    ),
    Reply(
        'printf \'CERTIFICATE_START\\n{"rule": "' + BUGGY + '", "violation": "suboptimal_extraction", '
        '"source": %s, "bundle": %s, "target_config": "0,1,0", "note": "vertex 0 is copied"}'
        '\\nCERTIFICATE_END\\n\' "$(cat source.json)" "$(cat bundle.json)"'
    ),
    Reply(SUBMIT),
]


class Script:
    """Triage and episodes by their prompt; the first call of a phase's second turn is held
    (never answered while the engine lives) once, so a SIGKILL lands inside that phase."""

    def __init__(self) -> None:
        self.hold: set[str] = set()
        self.held = {"triage": threading.Event(), "episode": threading.Event()}
        self.release = threading.Event()
        self.calls = {"triage": 0, "episode": 0}
        """Calls asked for, by phase (the held one included: it is counted when it arrives)."""

    def __call__(self, request):
        triage = request.mentions("choose the 2 reduction rules")
        phase = "triage" if triage else "episode"
        self.calls[phase] += 1
        steps = TRIAGE if triage else FIND_BUG if request.mentions(BUGGY) else []
        if request.turn == 1 and phase in self.hold:
            self.hold.discard(phase)
            self.held[phase].set()
            self.release.wait(60)
        return steps[request.turn] if request.turn < len(steps) else Reply(SUBMIT)


def shortlist_campaign(tmp_path, url):
    path = write_campaign(tmp_path, url, runner={"environment": "bubblewrap"})
    doc = tomllib.loads(path.read_text())
    del doc["tasks"]
    doc["parallelism"] = 1
    doc["protocol"] = {
        "kind": "shortlist",
        "shortlist_size": 2,
        "triage": {"model_calls": 4, "shell_actions": 3},
    }
    doc["budget"]["per_session"] = {"model_calls": 6, "shell_actions": 4, "tools": {"pred": 6}}
    path.write_text(tomli_w.dumps(doc))
    return path


def wait_for(event: threading.Event, proc, timeout: float = 90.0) -> None:
    deadline = time.monotonic() + timeout
    while not event.wait(0.05):
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "timed out"


def kill(proc) -> None:
    time.sleep(0.3)  # the held call's hold is durable by now (it is journalled before the call)
    proc.send_signal(signal.SIGKILL)
    proc.wait()


@pytest.fixture(autouse=True)
def _env(tmp_path, monkeypatch):
    pred_on_path(tmp_path, monkeypatch)
    monkeypatch.setenv("SCRIPTED_API_KEY", "sk-test-scripted-0000")


def test_triage_then_episodes_in_a_real_loop_resumed_after_sigkill_in_each_phase(tmp_path):
    script = Script()
    with ScriptedLLM(script=script) as llm:
        shortlist_campaign(tmp_path, llm.url)
        run = tmp_path / "runs/mini"
        try:
            script.hold = {"triage"}
            proc = popen("campaign.toml", "--no-ui", cwd=tmp_path)
            wait_for(script.held["triage"], proc)
            kill(proc)
            assert last_states(run)["openai_scripted-a-triage"]["state"] == "running"
            check_reconciled(tmp_path / "campaign.toml", tmp_path / "runs")

            script.hold = {"episode"}
            proc = popen("campaign.toml", "--no-ui", "--resume", cwd=tmp_path)
            wait_for(script.held["episode"], proc)
            kill(proc)
            committed = script.calls["triage"]
            check_reconciled(tmp_path / "campaign.toml", tmp_path / "runs")

            final = benchtui("campaign.toml", "--no-ui", "--resume", cwd=tmp_path, timeout=180)
            assert final.returncode == 0, final.stderr
        finally:
            script.release.set()
    assert script.calls["triage"] == committed == 2 + 3, "the committed triage ran again"
    last = last_states(run)
    triage = last["openai_scripted-a-triage"]
    assert (triage["state"], triage["attempt"]) == ("done", 2)
    assert [e["rule"] for e in triage["shortlist"]] == [BUGGY, SOUND]
    assert sorted(r["reason"] for r in triage["refused"]) == [
        "a duplicate of an earlier entry",
        "not a rule of the inventory",
    ]
    assert triage["counters"]["model_calls"] <= 4 and triage["counters"]["shell_actions"] <= 3
    first, second = last["openai_scripted-a-0000"], last["openai_scripted-a-0001"]
    assert (first["task"], first["state"], first["result"], first["attempt"]) == (
        BUGGY,
        "done",
        "bug_found",
        2,
    )
    assert (second["task"], second["state"], second["attempt"]) == (SOUND, "done", 1)
    # The triage saw the source and no pred; the episodes got pred (through the gate).
    triage_seen = [
        str(m["content"])
        for r in llm.requests
        if r.mentions("choose the")
        for m in r.messages
        if m["role"] != "assistant"
    ]
    assert any("NO-PRED-IN-TRIAGE" in text and "maximumindependentset" in text for text in triage_seen)
    assert all(x["state"] != "running" or "triage" in x["session"] or x["attempt"] for x in journal(run))
    check_accounts(run)
    report = benchtui("report", "runs/mini", "--format", "json", cwd=tmp_path)
    assert report.returncode == 0, report.stderr
    (row,) = json.loads(report.stdout)["shortlist"]
    assert (row["committed"], row["bugs"], row["judged_by"]) == (2, 1, "verifier")
    assert [(x["k"], x["bugs"]) for x in row["bugs_at"]] == [(1, 1), (1, 1), (2, 1)]


def test_the_commit_file_is_read_as_the_agent_wrote_it_never_through_a_link(tmp_path):
    import os

    from benchtui.runners.mini.runner import SHORTLIST_MAX_BYTES, read_shortlist

    outside = tmp_path / "host-secret.json"
    outside.write_text(json.dumps([{"rule": "the host's file"}]))
    workdir = tmp_path / "workdir"
    workdir.mkdir()
    commit = workdir / "shortlist.json"
    assert read_shortlist(workdir) == (None, "no shortlist.json committed")
    commit.symlink_to(outside)
    entries, why = read_shortlist(workdir)
    assert entries is None and "symbolic link (not followed)" in why  # never followed out of the sandbox
    commit.unlink()
    os.mkfifo(commit)  # a FIFO would block a reader forever
    assert read_shortlist(workdir) == (None, "shortlist.json: not a regular file (a FIFO)")
    commit.unlink()
    commit.write_text("[" * 100_000)
    assert read_shortlist(workdir) == (None, "shortlist.json is not JSON")
    commit.write_text(json.dumps({"rule": "R"}))
    assert read_shortlist(workdir) == (None, "shortlist.json is not a JSON list")
    commit.write_text(" " * (SHORTLIST_MAX_BYTES + 1))
    assert f"larger than {SHORTLIST_MAX_BYTES:,} bytes" in read_shortlist(workdir)[1]
    commit.write_text(json.dumps([{"rule": BUGGY, "hypothesis": "h"}]))
    assert read_shortlist(workdir) == ([{"rule": BUGGY, "hypothesis": "h"}], "")
