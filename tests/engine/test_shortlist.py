"""The shortlist protocol with the fake runner: a triage per model commits a shortlist the engine
validates, then one episode per rule in shortlist order; the plan grows durably, so SIGKILL in
either phase and `--resume` re-run and re-charge nothing; the report gives bugs@K."""

from __future__ import annotations

import json
import signal
import time
from collections import Counter
from pathlib import Path

import pytest
from support import benchtui, calls, check_accounts, check_reconciled, journal, last_states, ledger, popen
from support.real_parts import require_tools

from benchtui.engine.shortlist import judge
from benchtui.report.shortlist import cut_points
from benchtui.runners.fake import FakeProfile, FakeRunner

RULES = [f"R{i} -> T{i}" for i in range(1, 9)]


def shortlist_toml(
    tmp: Path,
    *,
    size: int = 3,
    scripted: dict[str, list[str]] | None = None,
    bugs: dict[str, list[int]] | None = None,
    latency: float = 0.0,
    parallelism: int = 2,
    total: str = "10",
    per_model: str | None = None,
    per_session: str = "0.05",
    rules: list[str] = RULES,
    models: tuple[str, ...] = ("fake/model-a", "fake/model-b"),
    triage: str = "{ model_calls = 8, shell_actions = 12 }",
    top: str = "",
) -> Path:
    (tmp / "target").mkdir(exist_ok=True)
    (tmp / "target" / "README").write_text("a stand-in target\n")
    scripted = scripted if scripted is not None else {}
    table = ", ".join(f'"{m}" = {json.dumps(r)}' for m, r in scripted.items())
    bug_table = ", ".join(f'"{m}" = {json.dumps(r)}' for m, r in (bugs or {}).items())
    model_tables = "".join(
        f'\n[[models]]\nname = "{m}"\ninput_usd_per_mtok = 3.0\noutput_usd_per_mtok = 15.0\n' for m in models
    )
    path = tmp / "s.toml"
    path.write_text(
        f"""name = "s"
parallelism = {parallelism}
runner = "fake"
{top}
[protocol]
kind = "shortlist"
shortlist_size = {size}
triage = {triage}

[budget]
total_usd = {total}
per_session_usd = {per_session}
{f"per_model_usd = {per_model}" if per_model else ""}

[runners.fake]
kind = "fake"
cost_usd = 0.03
latency_s = {latency}
call_log = "calls.jsonl"
rules = {json.dumps(rules)}
shortlist = {{ {table} }}
bug_sessions = {{ {bug_table} }}
{model_tables}
[environment]
path = "target"
"""
    )
    return path


def lines_of(run: Path, session: str) -> list[dict]:
    return [line for line in journal(run) if line["session"] == session]


# -- the commit, judged ----------------------------------------------------------------------------
def test_unknown_duplicate_and_surplus_rules_are_refused_with_the_reason_in_order():
    verdict = judge(
        [
            {"rule": "R3 -> T3", "hypothesis": "one\nline \x1b[2J  only\u202e"},
            {"rule": "R9 -> T9", "hypothesis": "not a rule"},
            {"rule": "R3 ->  T3", "hypothesis": "the same rule, spaced"},
            "garbage",
            {"rule": "R1 -> T1"},
            {"rule": "R2 -> T2", "hypothesis": "x" * 1000},
            {"rule": "R4 -> T4"},
        ],
        RULES,
        3,
    )
    assert [e.rule for e in verdict.shortlist] == ["R3 -> T3", "R1 -> T1", "R2 -> T2"]
    assert verdict.shortlist[0].hypothesis == "one line [2J only"  # no escape or bidi character left
    assert len(verdict.shortlist[2].hypothesis) == 300
    reasons = {(r.rule, r.reason) for r in verdict.refused}
    assert reasons == {
        ("R9 -> T9", "not a rule of the inventory"),
        ("R3 -> T3", "a duplicate of an earlier entry"),
        (None, "no rule named"),
        ("R4 -> T4", "beyond the 3 asked for"),
    }
    assert verdict.reason == "shortlist: 3 rules committed; 4 entries refused"


def test_too_few_is_the_models_outcome_and_garbage_is_never_a_crash():
    assert judge([{"rule": "R1 -> T1"}], RULES, 3).reason == "shortlist: 1 of 3 rules committed (too few)"
    for garbage in (None, "text", 7, {"rule": "R1 -> T1"}, [[1, 2]], [{"rule": 5}]):
        assert judge(garbage, RULES, 3).shortlist == ()
    flood = judge([{"rule": "R9 -> T9"}] * 100_000, RULES, 3)
    assert len(flood.refused) < 100  # bounded work on a flood


def test_bugs_at_k_cut_points_scale_to_the_shortlist_size():
    assert cut_points(50) == [("bugs@10", 10), ("bugs@25", 25), ("bugs@50", 50)]
    assert cut_points(20) == [("bugs@10", 4), ("bugs@25", 10), ("bugs@50", 20)]
    assert cut_points(1) == [("bugs@10", 1), ("bugs@25", 1), ("bugs@50", 1)]


# -- triage, then episodes -------------------------------------------------------------------------
def test_triage_then_one_episode_per_rule_in_shortlist_order_and_bugs_at_k(tmp_path):
    shortlist_toml(
        tmp_path,
        size=4,
        scripted={
            "fake/model-a": ["R2 -> T2", "R9 -> T9", "R2 -> T2", "R5 -> T5", "R1 -> T1", "R7 -> T7"],
            "fake/model-b": ["R3 -> T3"],
        },
        bugs={"fake/model-a": [0, 3], "fake/model-b": [0]},
        parallelism=1,
    )
    done = benchtui("s.toml", "--no-ui", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    run = tmp_path / "runs/s"
    last = last_states(run)
    triage = last["fake_model-a-triage"]
    assert [e["rule"] for e in triage["shortlist"]] == ["R2 -> T2", "R5 -> T5", "R1 -> T1", "R7 -> T7"]
    assert {r["reason"] for r in triage["refused"]} == {
        "not a rule of the inventory",
        "a duplicate of an earlier entry",
    }
    assert last["fake_model-b-triage"]["reason"] == "shortlist: 1 of 4 rules committed (too few)"
    tasks = {s: r["task"] for s, r in last.items() if not s.endswith("triage")}
    assert tasks == {
        "fake_model-a-0000": "R2 -> T2",
        "fake_model-a-0001": "R5 -> T5",
        "fake_model-a-0002": "R1 -> T1",
        "fake_model-a-0003": "R7 -> T7",
        "fake_model-b-0000": "R3 -> T3",
    }
    assert Counter(r["state"] for r in last.values()) == {"done": 7}
    # The episodes' pending lines were written in the triage's own commit, before any ran.
    lines = journal(run)
    end = lines.index(
        next(x for x in lines if x["session"] == "fake_model-a-triage" and x["state"] == "done")
    )
    assert [x["state"] for x in lines[end + 1 : end + 5]] == ["pending"] * 4
    # Round-robin (F4): both triages first, then m1#0, m2#0, m1#1, ...
    assert calls(run) == [
        "fake_model-a-triage",
        "fake_model-b-triage",
        "fake_model-a-0000",
        "fake_model-b-0000",
        "fake_model-a-0001",
        "fake_model-a-0002",
        "fake_model-a-0003",
    ]
    # Each triage is charged as a session (money per session as today), and not a results row.
    check_accounts(run)
    rows = json.loads((run / "results/fake_model-a.json").read_text())["results"]
    assert sorted(r["session"] for r in rows) == [f"fake_model-a-000{i}" for i in range(4)]
    report = benchtui("report", "runs/s", "--format", "json", cwd=tmp_path)
    assert report.returncode == 0, report.stderr
    by_model = {m["model"]: m for m in json.loads(report.stdout)["shortlist"]}
    a, b = by_model["fake/model-a"], by_model["fake/model-b"]
    assert (a["committed"], a["refused"], a["bugs"]) == (4, 2, 2)
    assert [(x["label"], x["k"], x["bugs"]) for x in a["bugs_at"]] == [
        ("bugs@10", 1, 1),
        ("bugs@25", 2, 1),
        ("bugs@50", 4, 2),
    ]
    assert (b["committed"], b["bugs"], [x["bugs"] for x in b["bugs_at"]]) == (1, 1, [1, 1, 1])
    text = benchtui("report", "runs/s", cwd=tmp_path).stdout
    assert "bugs@25" in text and "fake/model-b                   1/4" in text


def test_episodes_run_only_on_their_full_reservation_after_the_triage(tmp_path):
    # Each model's cap (0.05) holds one session's full reservation (0.05) only.
    shortlist_toml(tmp_path, size=2, per_model="0.05", total="0.10")
    done = benchtui("s.toml", "--no-ui", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    last = last_states(tmp_path / "runs/s")
    assert last["fake_model-a-triage"]["state"] == "done"
    episodes = {s: r["state"] for s, r in last.items() if not s.endswith("triage")}
    # F3: after its triage spent 0.03, an episode's full 0.05 no longer fits: skipped, never
    # run on a truncated budget (and a model's triage is never starved by another's episodes).
    assert set(episodes.values()) == {"skipped_budget"}
    check_accounts(tmp_path / "runs/s")


def test_sigkill_in_triage_and_in_the_episodes_then_resume_reruns_and_recharges_nothing(tmp_path):
    shortlist_toml(tmp_path, size=4, latency=0.4, parallelism=2, bugs={"fake/model-a": [1]})
    run = tmp_path / "runs/s"
    # 1. Killed while both triages run: nothing committed, both retried.
    proc = popen("s.toml", "--no-ui", cwd=tmp_path)
    wait_for(lambda: len(calls(run)) >= 2)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert all(r["state"] == "running" for r in last_states(run).values())
    check_reconciled(tmp_path / "s.toml", tmp_path / "runs")
    # 2. Resumed, then killed once some episodes ended and others run.
    proc = popen("s.toml", "--no-ui", "--resume", cwd=tmp_path)
    wait_for(
        lambda: sum(r["state"] == "done" and "triage" not in s for s, r in last_states(run).items()) >= 2
    )
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    finished = {s for s, r in last_states(run).items() if r["state"] == "done"}
    assert {"fake_model-a-triage", "fake_model-b-triage"} <= finished
    calls_before = len(calls(run))
    spent_before = ledger(run)["totals"]["spent_usd"]
    check_reconciled(tmp_path / "s.toml", tmp_path / "runs")
    # 3. Resumed to the end: the plan is rebuilt from the journal, finished sessions never rerun.
    final = benchtui("s.toml", "--no-ui", "--resume", cwd=tmp_path)
    assert final.returncode == 0, final.stderr
    rerun = set(calls(run)[calls_before:]) & finished
    assert not rerun, f"finished sessions ran again: {rerun}"
    last = last_states(run)
    assert Counter(r["state"] for r in last.values()) == {"done": 10}
    assert ledger(run)["totals"]["spent_usd"] >= spent_before
    # Each triage committed exactly once: one end line with a shortlist, one pending line per episode.
    for model in ("a", "b"):
        commits = [x for x in lines_of(run, f"fake_model-{model}-triage") if x["state"] == "done"]
        assert len(commits) == 1
        for i in range(4):
            pending = [x for x in lines_of(run, f"fake_model-{model}-000{i}") if x["state"] == "pending"]
            assert len(pending) == 1
    check_accounts(run)
    rows = json.loads((run / "results/fake_model-a.json").read_text())["results"]
    assert len(rows) == len({r["session"] for r in rows}) == 4


def wait_for(predicate, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            if predicate():
                return
        except (FileNotFoundError, ValueError):
            pass  # a run dir not there yet, or a line being written
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


# -- hostile input and identity -------------------------------------------------------------------
@pytest.mark.parametrize(
    ("change", "message"),
    [
        ('tasks = ["a"]', "give neither sessions_per_model nor tasks"),
        ("sessions_per_model = 3", "give neither sessions_per_model nor tasks"),
    ],
)
def test_a_shortlist_campaign_chooses_its_own_tasks(tmp_path, change, message):
    shortlist_toml(tmp_path, top=change)
    done = benchtui("s.toml", "--no-ui", cwd=tmp_path)
    assert done.returncode == 2 and message in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "runs").exists()


@pytest.mark.parametrize(
    ("kw", "message"),
    [
        ({"size": 0}, "shortlist_size"),
        ({"triage": "{ model_calls = 8 }"}, "shell_actions"),
        ({"triage": "{ model_calls = 8, shell_actions = 12, pred = 3 }"}, "pred"),
        ({"triage": "{ model_calls = 0, shell_actions = 12 }"}, "model_calls"),
        ({"size": 9}, "fewer than shortlist_size = 9"),
        ({"rules": []}, "rules"),
        ({"rules": ["ok", "bad\u001b[31m"]}, "control character"),
    ],
)
def test_bad_protocol_keys_are_one_line_errors(tmp_path, kw, message):
    shortlist_toml(tmp_path, **kw)
    done = benchtui("s.toml", "--no-ui", cwd=tmp_path)
    assert done.returncode == 2, done.stdout
    assert message in done.stderr and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "runs").exists()


def test_a_triage_never_runs_on_a_runner_without_a_rule_inventory(tmp_path):
    require_tools("bwrap", "socat")  # the command runner's preflight needs them before the triage check
    path = shortlist_toml(tmp_path, size=2)
    text = path.read_text().replace(
        "[[models]]", '[runners.cli]\nkind = "command"\ncommand = ["true"]\n\n[[models]]', 1
    )
    text += '\n[target]\nkind = "none"\n'  # an agent CLI on a target without pred
    path.write_text(text)
    done = benchtui("s.toml", "--no-ui", "--runner", "cli", cwd=tmp_path)
    assert done.returncode == 2 and "cannot run a triage" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr
    # Once every triage committed, episodes may run on it (here: nothing is left to run).
    assert benchtui("s.toml", "--no-ui", cwd=tmp_path).returncode == 0
    again = benchtui("s.toml", "--no-ui", "--resume", "--runner", "cli", cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    # A campaign on a target without an inventory (none scripted) cannot start.
    lines = path.read_text().replace('runner = "fake"', 'runner = "cli"').split("\n")
    start = lines.index("[runners.fake]")
    stop = lines.index("[runners.cli]")
    path.write_text("\n".join(lines[:start] + lines[stop:]))
    done = benchtui("s.toml", "--no-ui", "--fresh", cwd=tmp_path)
    assert done.returncode == 2 and "has no rule inventory" in done.stderr, done.stderr


def test_the_protocol_and_the_inventory_are_identity(tmp_path):
    path = shortlist_toml(tmp_path, size=2)
    assert benchtui("s.toml", "--no-ui", cwd=tmp_path).returncode == 0
    identity = json.loads((tmp_path / "runs/s/identity.json").read_text())
    assert {"protocol", "inventory"} <= set(identity)
    path.write_text(path.read_text().replace("shortlist_size = 2", "shortlist_size = 3"))
    again = benchtui("s.toml", "--no-ui", "--resume", cwd=tmp_path)
    assert again.returncode == 2 and "protocol" in again.stderr
    path.write_text(path.read_text().replace("shortlist_size = 3", "shortlist_size = 2").replace("T8", "T9"))
    again = benchtui("s.toml", "--no-ui", "--resume", cwd=tmp_path)
    assert again.returncode == 2 and "inventory" in again.stderr


def test_a_journal_line_for_an_episode_no_triage_committed_is_corruption(tmp_path):
    shortlist_toml(tmp_path, size=2, scripted={"fake/model-a": ["R1 -> T1"]})
    assert benchtui("s.toml", "--no-ui", cwd=tmp_path).returncode == 0
    run = tmp_path / "runs/s"
    forged = {**last_states(run)["fake_model-a-0000"], "session": "fake_model-a-0001", "task": "R2 -> T2"}
    with open(run / "sessions.jsonl", "a") as f:
        f.write(json.dumps(forged) + "\n")
    again = benchtui("s.toml", "--no-ui", "--resume", cwd=tmp_path)
    assert again.returncode == 2 and "a session this campaign does not plan" in again.stderr


def test_the_audit_finds_a_triage_that_ran_with_another_budget(tmp_path):
    shortlist_toml(tmp_path, size=2)
    assert benchtui("s.toml", "--no-ui", cwd=tmp_path).returncode == 0
    run = tmp_path / "runs/s"
    fair = json.loads(benchtui("report", "runs/s", "--format", "json", cwd=tmp_path).stdout)["fairness"]
    assert fair["findings"] == []
    lines = (run / "sessions.jsonl").read_text().splitlines()
    edited = []
    for line in lines:
        rec = json.loads(line)
        if rec.get("session") == "fake_model-b-triage" and rec.get("state") == "done":
            rec["triage_limits"] = {"model_calls": 80, "shell_actions": 12}
        edited.append(json.dumps(rec))
    (run / "sessions.jsonl").write_text("\n".join(edited) + "\n")
    fair = json.loads(benchtui("report", "runs/s", "--format", "json", cwd=tmp_path).stdout)["fairness"]
    assert len(fair["findings"]) == 1 and fair["findings"][0].startswith("triage:")
    assert "model_calls=80" in fair["findings"][0]


def test_the_shipped_top50_campaign_has_the_benchmarks_numbers():
    from support import ROOT

    from benchtui.engine import campaign as campaign_file

    shipped = campaign_file.load(ROOT / "campaigns/problem-reductions-top50.toml", require_target=False)
    assert shipped.protocol is not None and shipped.protocol.shortlist_size == 50
    assert (shipped.protocol.triage.model_calls, shipped.protocol.triage.shell_actions) == (8, 12)
    limits = shipped.logical_limits
    assert (limits.model_calls, limits.shell_actions, limits.submits, limits.observation_chars) == (
        10,
        12,
        2,
        10_000,
    )
    assert dict(limits.tools) == {"pred": 24, "pred solve": 10}
    # F3: every model's cap holds its triage and all 50 episodes at their full reservation.
    assert shipped.per_session_usd * 51 <= shipped.per_model_usd
    assert shipped.sessions_per_model_count == 51


def test_the_real_rule_inventory_fits_the_top50_triage_prompt():
    """The real pred's 260 rules (`../shared`, test time only) rendered into the shipped triage template."""
    import jinja2
    from support import ROOT

    from benchtui.runners.mini.profile import DEFAULT_TEMPLATES, load_templates

    rules_file = ROOT.parent / "shared/tools/pred/rules.json"
    if not rules_file.exists():
        pytest.skip(f"{rules_file} is absent (it exists in the project's CI, not in a fresh clone)")
    rules = [f"{r['source']} -> {r['target']}" for r in json.loads(rules_file.read_text())["rules"]]
    assert len(rules) == len(set(rules)) >= 50  # rule ids are unique: a shortlist entry names one
    from benchtui.targets.problem_reductions import ProblemReductions

    template = load_templates(DEFAULT_TEMPLATES, ProblemReductions.brief)["triage_template"]
    text = (
        jinja2.Environment(undefined=jinja2.StrictUndefined)
        .from_string(template)
        .render(rules=rules, shortlist_size=50, budget="8 model calls, 12 shell actions", step_limit=50)
    )
    assert all(f"- {rule}\n" in text for rule in rules) and "shortlist.json" in text
    assert len(text) < 20_000  # the inventory costs the triage ~5k tokens of its prompt


def test_the_ui_model_takes_a_triages_episodes_as_they_are_planned():
    from benchtui.engine import events as ev
    from benchtui.engine.plan import PlannedSession
    from benchtui.ui.model import ViewModel

    view = ViewModel(
        "s", "fake", 1, [PlannedSession("m-triage", "m", -1, None, triage=True)], {}, clock=lambda: 0.0
    )
    view.apply(ev.SessionsPlanned(model="m", sessions=(("m-0000", 0, "R1 -> T1"), ("m-0001", 1, "R2 -> T2"))))
    assert list(view.sessions) == ["m-triage", "m-0000", "m-0001"] and view.states["pending"] == 3
    view.apply(
        ev.SessionStarted(session="m-0001", model="m", index=1, task="R2 -> T2", attempt=1, runner="fake")
    )
    assert view.sessions["m-0001"].state == "running" and view.states["pending"] == 2
    assert view.take_changes().log[0].endswith("plan  2 episodes of m (its shortlist)")


@pytest.mark.trio
async def test_switching_to_a_runner_without_an_inventory_is_refused_while_a_triage_is_to_run(tmp_path):
    import trio
    from support import start

    from benchtui.engine import run as engine

    path = shortlist_toml(tmp_path, size=2, latency=0.3, parallelism=1)
    path.write_text(
        path.read_text().replace(
            "[[models]]", '[runners.cli]\nkind = "command"\ncommand = ["true"]\n\n[[models]]', 1
        )
        + '\n[target]\nkind = "none"\n'
    )
    with engine.prepare(engine.Options(path, tmp_path / "runs")) as prep:
        async with trio.open_nursery() as nursery:
            scheduler, result = await start(prep, nursery)
            with pytest.raises(ValueError, match="cannot run a triage, and 2 triage"):
                scheduler.set_runner("cli")
            assert scheduler.runner == "fake"
    assert result["finished"]


def test_check_reports_the_rule_inventory(tmp_path):
    shortlist_toml(tmp_path, size=3)
    done = benchtui("check", "s.toml", cwd=tmp_path)
    assert done.returncode == 0 and "8 rules; each triage commits 3" in done.stdout, done.stdout
    shortlist_toml(tmp_path, size=9)
    done = benchtui("check", "s.toml", cwd=tmp_path)
    assert done.returncode == 2 and "fewer than shortlist_size = 9" in done.stderr


class UnevenProfile(FakeProfile):
    kind: str = "test_shortlist:UnevenTriage"


class UnevenTriage(FakeRunner):
    """The fake runner, but model b's triage takes a while (a slower model thinking longer)."""

    Profile = UnevenProfile

    async def run(self, session, meter):
        import trio

        if session.triage is not None and session.model.name.endswith("-b"):
            await trio.sleep(0.5)
        return await super().run(session, meter)


@pytest.mark.trio
@pytest.mark.parametrize("per_model", ["0.20", "0.10"])
async def test_a_slow_triage_loses_no_share_of_a_shared_total(tmp_path, per_model):
    """Caps adding up to more than the total (0.20 each of 0.20): episodes wait for every triage,
    then launch round-robin, so the cut-off hits both models alike (F4). With caps that add up to
    the total (0.10 each), each model's cap already protects its share."""
    import trio
    from support import start

    from benchtui.engine import run as engine

    path = shortlist_toml(tmp_path, size=4, total="0.20", per_model=per_model, per_session="0.05")
    path.write_text(path.read_text().replace('kind = "fake"', 'kind = "test_shortlist:UnevenTriage"'))
    with engine.prepare(engine.Options(path, tmp_path / "runs")) as prep:
        async with trio.open_nursery() as nursery:
            await start(prep, nursery)
    last = last_states(tmp_path / "runs/s")
    done = Counter(r["model"] for s, r in last.items() if r["state"] == "done" and "triage" not in s)
    assert done["fake/model-a"] == done["fake/model-b"] >= 1, done
    check_accounts(tmp_path / "runs/s")
