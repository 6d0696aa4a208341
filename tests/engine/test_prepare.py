"""Preparing a run: one pass down (the campaign, its kinds resolved as it is validated, every check,
the identity, the plan, then the run dir), bad input writes nothing, and the run dir's lock has an
owner from the moment it is taken: prepare until it returns (a failure releases it), then the
PreparedRun."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support import write_campaign
from test_shortlist import shortlist_toml

from benchtui.core import registry
from benchtui.core.errors import BadInput, RunDirBusy
from benchtui.engine import campaign as campaign_file
from benchtui.engine import run as engine
from benchtui.engine import rundir
from benchtui.runners.fake import FakeProfile, FakeRunner


class NoTriageProfile(FakeProfile):
    kind: str = "test_prepare:NoTriage"


class NoTriage(FakeRunner):
    """The fake runner without a rule inventory: it cannot run a shortlist campaign's triage."""

    Profile = NoTriageProfile
    runs_triage = False


NO_TRIAGE = '\n[runners.plain]\nkind = "test_prepare:NoTriage"\ncost_usd = 0.03\n'


def free(run_dir: Path) -> bool:
    """Whether the run dir's lock can be taken (by this process: a lock it leaked still counts)."""
    try:
        rundir.RunLock(run_dir).release()
    except RunDirBusy:
        return False
    return True


@pytest.fixture
def no_lookups_after_loading(monkeypatch):
    """After the campaign is loaded, the registry refuses every lookup: what needs a kind is handed
    the one resolved when the campaign was validated."""
    real_load, real_lookup = campaign_file.load, registry.runner_class

    def refused(kind: str):
        raise AssertionError(f"runner kind {kind!r} looked up again after validation")

    def load(*args, **kwargs):
        monkeypatch.setattr(registry, "runner_class", real_lookup)
        campaign = real_load(*args, **kwargs)
        monkeypatch.setattr(registry, "runner_class", refused)
        return campaign

    monkeypatch.setattr(engine.campaign_file, "load", load)


def test_preparing_looks_no_kind_up_after_the_campaign_is_validated(tmp_path, no_lookups_after_loading):
    path = write_campaign(tmp_path, extra_runners=NO_TRIAGE, extra="[budget.per_session]\nmodel_calls = 3\n")
    with engine.prepare(engine.Options(path, tmp_path / "runs")) as prep:
        assert prep.runner == "fake" and len(prep.plan) == 10


def test_a_shortlist_campaign_resolves_its_inventorys_kind_once_too(tmp_path, no_lookups_after_loading):
    path = shortlist_toml(tmp_path, size=2)
    path.write_text(path.read_text().replace("[[models]]", NO_TRIAGE.lstrip() + "\n[[models]]", 1))
    with engine.prepare(engine.Options(path, tmp_path / "runs")) as prep:
        assert len(prep.inventory) == 8 and [s.triage for s in prep.plan] == [True, True]
    # The inventory comes from a profile that can triage even when the active one cannot; the
    # triages cannot run on it, so the start is refused.
    with pytest.raises(BadInput, match="runner 'plain' cannot run a triage"):
        engine.prepare(engine.Options(path, tmp_path / "runs", runner="plain", fresh=True))


def test_a_start_on_a_runner_that_cannot_triage_writes_nothing_and_moves_nothing(tmp_path):
    path = shortlist_toml(tmp_path, size=2)
    path.write_text(path.read_text().replace("[[models]]", NO_TRIAGE.lstrip() + "\n[[models]]", 1))
    state = tmp_path / "runs"
    with engine.prepare(engine.Options(path, state)):
        pass
    before = sorted(p.name for p in state.iterdir())
    (state / "s" / "mark").write_text("the previous run")
    with pytest.raises(BadInput, match="cannot run a triage .* choose another --runner"):
        engine.prepare(engine.Options(path, state, runner="plain", fresh=True))
    assert sorted(p.name for p in state.iterdir()) == before  # the previous run not moved aside
    assert (state / "s" / "mark").read_text() == "the previous run" and free(state / "s")


def test_a_refused_resume_releases_the_lock_it_took(tmp_path):
    path = write_campaign(tmp_path)
    state = tmp_path / "runs"
    with engine.prepare(engine.Options(path, state)) as prep:
        assert not free(prep.run_dir)  # the PreparedRun holds it
    assert free(prep.run_dir)
    write_campaign(tmp_path, total="0.30")  # the identity's budget part changes
    with pytest.raises(BadInput, match="changed since it started: budget"):
        engine.prepare(engine.Options(path, state, resume=True))
    assert free(prep.run_dir)
    write_campaign(tmp_path)
    (prep.run_dir / "sessions.jsonl").write_text('{"session": "x"}\nnot json\n')
    with pytest.raises(BadInput, match="corrupted journal"):
        engine.prepare(engine.Options(path, state, resume=True))
    assert free(prep.run_dir)


def test_a_failure_after_the_run_dir_is_created_releases_its_lock(tmp_path):
    path = write_campaign(tmp_path)
    state = tmp_path / "runs"
    state.mkdir()
    (state / rundir.LATEST).mkdir()  # the latest-run pointer cannot be written
    with pytest.raises(OSError):
        engine.prepare(engine.Options(path, state))
    assert free(state / "t")
    identity = json.loads((state / "t" / rundir.IDENTITY).read_text())
    assert set(identity) == {"models", "sessions", "budget", "runners", "environment", "history"}
