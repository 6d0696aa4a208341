"""A campaign grows on `--resume`: models added (never removed, re-priced or reordered) and repeats
added, with money explicit; the earlier sessions are not touched (not re-run, not re-charged, their
caps unchanged), the new ones get what the earlier ones got, and the identity records each extension."""

from __future__ import annotations

import shutil
from collections import Counter
from pathlib import Path

import pytest
import trio
from support import ROOT, benchtui, calls, journal, last_states, ledger

from benchtui.core.errors import BadInput
from benchtui.engine import events as ev
from benchtui.engine import identity_file
from benchtui.engine import run as engine
from benchtui.report import build

MODEL = '\n[[models]]\nname = "{name}"\ninput_usd_per_mtok = {price}\noutput_usd_per_mtok = 15.0\n'


def campaign(
    *,
    models: tuple[str, ...] = ("fake/model-a", "fake/model-b"),
    sessions: str = "sessions_per_model = 2",
    budget: str = "total_usd = 0.2\nper_model_usd = 0.1\nper_session_usd = 0.03",
    cost: str = "0.03",
    prices: dict[str, str] | None = None,
) -> str:
    tables = "".join(MODEL.format(name=m, price=(prices or {}).get(m, "3.0")) for m in models)
    return f"""name = "g"
{sessions}
runner = "fake"

[budget]
{budget}

[runners.fake]
kind = "fake"
cost_usd = {cost}
call_log = "calls.jsonl"
{tables}
[environment]
path = "target"
"""


def write(tmp_path: Path, text: str) -> Path:
    (tmp_path / "target").mkdir(exist_ok=True)
    (tmp_path / "target" / "README").write_text("a stand-in target\n")
    path = tmp_path / "g.toml"
    path.write_text(text)
    return path


def run(path: Path, *, resume: bool = False, fresh: bool = False) -> engine.PreparedRun:
    prep = engine.prepare(engine.Options(path, path.parent / "runs", resume=resume, fresh=fresh))
    with prep:
        assert trio.run(engine.run, prep, ev.EventBus())
    return prep


def test_a_model_added_on_resume_runs_only_its_sessions_on_what_the_others_got(tmp_path):
    path = write(tmp_path, campaign())
    first = run(path)
    run_dir = first.run_dir
    lines, spent = (run_dir / "sessions.jsonl").read_bytes(), ledger(run_dir)["models"]
    before = len(journal(run_dir))
    path.write_text(
        campaign(models=("fake/model-a", "fake/model-b", "fake/model-c"), budget=BUDGET.format(total="0.3"))
    )
    grown = run(path, resume=True)
    assert grown.notes == [f"grew {run_dir}: models added: fake/model-c; total_usd $0.20 -> $0.30"]
    # The earlier sessions: not re-run, not re-charged (their lines are the journal's first, as
    # they were; every new line is model-c's), their caps and spend unchanged.
    assert (run_dir / "sessions.jsonl").read_bytes().startswith(lines)
    new = journal(run_dir)[before:]
    assert {r["model"] for r in new} == {"fake/model-c"}
    assert Counter(c.rsplit("-", 1)[0] for c in calls(run_dir)) == {
        "fake_model-a": 2,
        "fake_model-b": 2,
        "fake_model-c": 2,
    }
    accounts = ledger(run_dir)["models"]
    for model in ("fake/model-a", "fake/model-b"):
        assert accounts[model] == spent[model]
    assert accounts["fake/model-c"]["cap_usd"] == 0.1 and accounts["fake/model-c"]["sessions_done"] == 2
    assert ledger(run_dir)["totals"]["budget_usd"] == 0.3
    # What the new sessions got: the reservation and the environment the others got.
    starts = [r for r in journal(run_dir) if r["state"] == "running"]
    assert {(r["reserved_usd"], r["environment"]) for r in starts} == {(0.03, first.fingerprint)}
    # The identity records the extension: what, when, on which fingerprint.
    record = identity_file.read(run_dir)
    start, grow = record.history
    assert (start.event, start.models) == ("start", ["fake/model-a", "fake/model-b"])
    assert (grow.event, grow.models, grow.budget) == ("grow", ["fake/model-c"], {"total_usd": ["0.2", "0.3"]})
    assert grow.fingerprint == start.fingerprint == first.fingerprint and grow.at >= start.at
    assert record.digests == grown.campaign.identity(grown.fingerprint)
    # The report: the three models, the new one joined by the extension.
    report = build([run_dir])
    assert [m.model for m in report.models] == ["fake/model-a", "fake/model-b", "fake/model-c"]
    joined = {a.model.name: a.joined for a in report.fairness.models}
    assert joined["fake/model-c"] == (f"{grow.at} ({run_dir})",) and joined["fake/model-a"] == ()
    assert all(a.dates() is not None for a in report.fairness.models)


BUDGET = "total_usd = {total}\nper_model_usd = 0.1\nper_session_usd = 0.03"


def test_repeats_added_run_only_the_new_repeats(tmp_path):
    tasks = 'tasks = ["r1", "r2"]\nrepeats = {}'
    path = write(tmp_path, campaign(sessions=tasks.format(1), budget=BUDGET.format(total="0.2")))
    run_dir = run(path).run_dir
    before = set(last_states(run_dir))
    # Each model's cap rises with its new sessions (explicitly), the total by both rises.
    path.write_text(
        campaign(
            sessions=tasks.format(2), budget="total_usd = 0.4\nper_model_usd = 0.2\nper_session_usd = 0.03"
        )
    )
    grown = run(path, resume=True)
    assert grown.notes == [
        f"grew {run_dir}: sessions per model 2 -> 4; total_usd $0.20 -> $0.40; per_model_usd $0.10 -> $0.20"
    ]
    states = last_states(run_dir)
    added = set(states) - before
    assert added == {f"fake_model-{m}-{i:04d}" for m in "ab" for i in (2, 3)}
    assert [states[s]["task"] for s in sorted(added)] == ["r1", "r2", "r1", "r2"]
    assert all(states[s]["attempt"] == 1 for s in states)
    assert sorted(calls(run_dir)[4:]) == sorted(added)
    assert identity_file.read(run_dir).history[-1].sessions_per_model == [2, 4]


def refused_growths() -> dict[str, tuple[str, str]]:
    three = ("fake/model-a", "fake/model-b", "fake/model-c")
    return {
        "a model removed": (campaign(models=("fake/model-a",)), "models removed: fake/model-b"),
        "models reordered": (
            campaign(
                models=("fake/model-b", "fake/model-a", "fake/model-c"), budget=BUDGET.format(total="0.3")
            ),
            "models reordered: list the earlier ones first, in their order (fake/model-a, fake/model-b)",
        ),
        "a model re-priced": (
            campaign(models=three, budget=BUDGET.format(total="0.3"), prices={"fake/model-a": "4.0"}),
            "model fake/model-a changed (input_usd_per_mtok 3 -> 4)",
        ),
        "a derived cap that would change": (
            campaign(models=three, budget="total_usd = 0.25\nper_session_usd = 0.03"),
            "each model's cap would change from $0.10 to $0.083333333 (the earlier models' caps never "
            "change as models join); total_usd must rise by at least $0.10 (what the added caps can "
            "spend), from $0.20: write under [budget]: per_model_usd = 0.1; total_usd = 0.3",
        ),
        "an explicit cap changed as a model joins": (
            campaign(models=three, budget="total_usd = 0.6\nper_model_usd = 0.2\nper_session_usd = 0.03"),
            "write under [budget]: per_model_usd = 0.1",
        ),
        "the total not raised by the new cap": (
            campaign(models=three, budget=BUDGET.format(total="0.25")),
            "total_usd must rise by at least $0.10 (what the added caps can spend), from $0.20: write "
            "under [budget]: total_usd = 0.3",
        ),
        "a derived per-session budget that would change": (
            campaign(sessions="sessions_per_model = 4", budget="total_usd = 0.2\nper_model_usd = 0.1"),
            "each session's budget would change from $0.05 to $0.025: write under [budget]: "
            "per_session_usd = 0.05",
        ),
        "sessions lowered": (
            campaign(sessions="sessions_per_model = 1", budget="total_usd = 0.2\nper_model_usd = 0.1"),
            "sessions_per_model lowered (2 -> 1 sessions per model)",
        ),
        "only the budget raised": (
            campaign(budget=BUDGET.format(total="0.3")),
            "changed since it started: budget (the budget may change only as the campaign grows",
        ),
        "a runner changed as a model joins": (
            campaign(models=three, budget=BUDGET.format(total="0.3"), cost="0.02"),
            "changed since it started: models, budget, runners (a campaign grows only by models and sessions",
        ),
    }


@pytest.mark.parametrize("case", list(refused_growths()))
def test_a_growth_that_would_change_what_sessions_got_is_refused_in_one_line_writing_nothing(tmp_path, case):
    text, message = refused_growths()[case]
    base = campaign()
    if "per-session" in case or "lowered" in case:
        base = campaign(budget="total_usd = 0.2\nper_model_usd = 0.1")  # each session: $0.05, derived
    path = write(tmp_path, base)
    run_dir = run(path).run_dir
    before = {p.name: p.read_bytes() for p in run_dir.iterdir() if p.is_file() and p.name != ".lock"}
    path.write_text(text)
    with pytest.raises(BadInput) as refused:
        engine.prepare(engine.Options(path, tmp_path / "runs", resume=True))
    assert message in str(refused.value) and "\n" not in str(refused.value)
    after = {p.name: p.read_bytes() for p in run_dir.iterdir() if p.is_file() and p.name != ".lock"}
    assert after == before


def _first_toml(tmp_path: Path) -> str:
    """The docs' first.toml (docs/getting-started.md), its target a folder here."""
    from tests.docs.test_getting_started import marked

    (tmp_path / "target").mkdir(exist_ok=True)
    return marked("file")["first.toml"].replace('"../problem-reductions"', f'"{tmp_path / "target"}"')


def _campaign_of(tmp_path: Path, text: str, name: str):
    from benchtui.engine.campaign.loading import load

    path = tmp_path / name
    path.write_text(text)
    return load(path)


def _pasted(text: str, refusal: str) -> str:
    """The campaign with the refusal's lines written under [budget], as a user would paste them."""
    lines = refusal.split("write under [budget]: ", 1)[1].split("; ")
    keys = {line.split(" = ")[0] for line in lines}
    kept = [line for line in text.splitlines() if line.split(" = ")[0].strip() not in keys]
    at = kept.index("[budget]") + 1
    return "\n".join([*kept[:at], *lines, *kept[at:]]) + "\n"


SECOND_MODEL = (
    '\n[[models]]\nname = "openai/qwen3-14b"\napi_base = "http://127.0.0.1:8000/v1"\n'
    "input_usd_per_mtok = 0.1\noutput_usd_per_mtok = 0.4\n"
)


@pytest.mark.parametrize("grown", ["a model added", "sessions doubled"])
def test_growing_the_docs_first_campaign_is_refused_once_with_every_line_to_write(tmp_path, grown):
    """first.toml derives its caps from `total_usd` alone: a growth changes three amounts at once,
    and one refusal names them all; pasting its lines makes the same growth pass."""
    from benchtui.engine.campaign.growth import growth

    text = _first_toml(tmp_path)
    old = _campaign_of(tmp_path, text, "old.toml")
    if grown == "a model added":
        text = text.replace("\n[environment]", SECOND_MODEL + "\n[environment]")
    else:
        text = text.replace("sessions_per_model = 2", "sessions_per_model = 4")
    with pytest.raises(BadInput) as refused:
        growth(old, _campaign_of(tmp_path, text, "new.toml"), ["models", "budget"], "runs/first")
    message = str(refused.value)
    assert "\n" not in message and message.count("write under [budget]") == 1
    if grown == "a model added":
        assert message.endswith(
            "write under [budget]: per_session_usd = 0.5; per_model_usd = 1; total_usd = 2"
        )
    else:
        assert message.endswith("write under [budget]: per_session_usd = 0.5; per_model_usd = 1")
    fixed = _campaign_of(tmp_path, _pasted(text, message), "fixed.toml")
    done = growth(old, fixed, ["models", "budget"], "runs/first")
    assert fixed.per_session_usd == old.per_session_usd and fixed.models[0] == old.models[0]
    assert done.models == (("openai/qwen3-14b",) if grown == "a model added" else ())


def test_a_start_without_a_flag_says_what_resume_would_add(tmp_path):
    path = write(tmp_path, campaign())
    run(path)
    path.write_text(
        campaign(models=("fake/model-a", "fake/model-b", "fake/model-c"), budget=BUDGET.format(total="0.3"))
    )
    again = benchtui("g.toml", "--no-ui", cwd=tmp_path)
    assert again.returncode == 2
    assert (
        "runs/g: campaign g grew since the run started (models added: fake/model-c; total_usd $0.20 -> $0.30): "
        "`benchtui g.toml --resume` adds that to it, `benchtui g.toml --fresh` starts over" in again.stderr
    )
    path.write_text(
        campaign(models=("fake/model-a", "fake/model-b", "fake/model-c"), budget=BUDGET.format(total="0.2"))
    )
    again = benchtui("g.toml", "--no-ui", cwd=tmp_path)
    assert (
        again.returncode == 2
        and "--resume cannot grow it: total_usd must rise by at least $0.10" in again.stderr
    )
    assert len(calls(tmp_path / "runs" / "g")) == 4


def test_a_crash_inside_a_growth_leaves_the_run_as_it_was_or_as_grown(tmp_path, monkeypatch):
    path = write(tmp_path, campaign())
    run_dir = run(path).run_dir
    old_campaign = (run_dir / "campaign.toml").read_bytes()
    grown_text = campaign(
        models=("fake/model-a", "fake/model-b", "fake/model-c"), budget=BUDGET.format(total="0.3")
    )
    path.write_text(grown_text)

    # Killed before its commit (identity.json not yet written): the run is as it was.
    writes = identity_file.atomic_write

    def dies_at_the_commit(target: Path, data: bytes) -> None:
        if target.name == identity_file.FILE:
            raise KeyboardInterrupt  # the process dies here
        writes(target, data)

    monkeypatch.setattr(identity_file, "atomic_write", dies_at_the_commit)
    with pytest.raises(KeyboardInterrupt):
        engine.prepare(engine.Options(path, tmp_path / "runs", resume=True))
    monkeypatch.undo()
    assert (run_dir / identity_file.NEXT).exists() and (
        run_dir / "campaign.toml"
    ).read_bytes() == old_campaign
    assert identity_file.frozen(run_dir) == run_dir / "campaign.toml"  # readers: the old campaign
    assert [m.model for m in build([run_dir]).models] == ["fake/model-a", "fake/model-b"]

    # Killed after its commit, before the rename: readers and a resume see the grown campaign.
    replace = identity_file.os.replace

    def dies_at_the_rename(src: Path, dst: Path) -> None:
        if Path(dst).name == "campaign.toml":
            raise KeyboardInterrupt
        replace(src, dst)

    monkeypatch.setattr(identity_file.os, "replace", dies_at_the_rename)
    with pytest.raises(KeyboardInterrupt):
        engine.prepare(engine.Options(path, tmp_path / "runs", resume=True))
    monkeypatch.undo()
    assert (run_dir / "campaign.toml").read_bytes() == old_campaign  # not renamed yet
    assert identity_file.frozen(run_dir) == run_dir / identity_file.NEXT
    assert [m.model for m in build([run_dir]).models][-1] == "fake/model-c"
    # `--resume` from the frozen copy (no campaign file) settles it: the grown run goes on.
    resumed = engine.prepare(engine.Options(None, tmp_path / "runs", resume=True))
    with resumed:
        assert [m.name for m in resumed.campaign.models][-1] == "fake/model-c"
        assert not (run_dir / identity_file.NEXT).exists()
        assert trio.run(engine.run, resumed, ev.EventBus())
    assert len(identity_file.read(run_dir).extensions) == 1
    assert Counter(c.rsplit("-", 1)[0] for c in calls(run_dir))["fake_model-c"] == 2


def test_a_run_of_an_older_release_grows_too(tmp_path):
    fixtures = ROOT / "tests" / "fixtures" / "rundirs"
    target = tmp_path / "target"
    shutil.copytree(fixtures / "target", target)
    run_dir = tmp_path / "runs" / "stopped"
    shutil.copytree(fixtures / "stopped", run_dir)
    frozen = run_dir / "campaign.toml"
    frozen.write_text(frozen.read_text().replace("/tmp/house-fix/target", str(target)))
    first = journal(run_dir)
    text = (fixtures / "stopped.toml").read_text().replace("benchtui.ui.demo:DemoRunner", "demo")
    text = text.replace("total_usd = 1.0", "total_usd = 1.5\nper_model_usd = 0.5")
    text = text.replace("[environment]", MODEL.format(name="acme/coder-new", price="3.0") + "\n[environment]")
    path = tmp_path / "stopped.toml"
    path.write_text(text.replace('path = "target"', f'path = "{target}"'))
    prep = engine.prepare(engine.Options(path, tmp_path / "runs", resume=True, runner="quick"))
    with prep:
        assert prep.notes == [f"grew {run_dir}: models added: acme/coder-new; total_usd $1.00 -> $1.50"]
        assert trio.run(engine.run, prep, ev.EventBus())
    assert [e.event for e in identity_file.read(run_dir).history] == ["grow"]  # its start predates it
    assert journal(run_dir)[: len(first)] == first
    states = last_states(run_dir)
    assert len(states) == 9 and {r["state"] for r in states.values()} == {"done"}
    assert states["acme_coder-xl-0000"] == first[-1]  # its one finished session, untouched
    report = build([run_dir]).to_json()
    assert [m["model"] for m in report["models"]].count("acme/coder-new") == 1
    assert report["run_details"][0]["extensions"][0]["models"] == ["acme/coder-new"]
