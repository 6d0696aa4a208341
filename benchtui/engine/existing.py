"""A run dir that exists when a campaign starts: continue it, grow it, show it finished, or refuse.

Re-running never spends twice by accident: without a flag, a run of the same identity that is
unfinished is refused (its progress, its spend, the two commands), a finished one is shown, and
a run of another identity is refused naming what differs; `--fresh` is the only way to start
over. `--resume` continues a run of the same identity, or grows it (campaign/growth.py) and
records the extension in its identity (identity_file.py). Called by `run.prepare` with the run
dir locked; nothing here writes except `commit`.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

import benchtui
from benchtui.core.errors import BadInput
from benchtui.core.money import fmt
from benchtui.engine import campaign as campaign_file
from benchtui.engine import checkpoint, identity_file, rundir
from benchtui.engine.campaign import Campaign
from benchtui.engine.campaign.growth import GROWABLE, Growth, growth
from benchtui.engine.identity_file import Entry, RunIdentity, Trial
from benchtui.engine.plan import PlannedSession
from benchtui.engine.preflight import Start

TRIAL = "trial"
"""The identity part a quick trial adds (a hash of how it was cut)."""


def trial_digest(trial: Trial) -> str:
    text = json.dumps(trial.model_dump(mode="json"), sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


@dataclass(frozen=True, slots=True)
class Commands:
    """The two commands a refusal names, spelled as the user started this one."""

    resume: str
    fresh: str

    @classmethod
    def of(cls, campaign: Path | None, state_dir: Path, trial: Trial | None) -> Commands:
        given = [str(campaign)] if campaign is not None else []
        if state_dir != rundir.state_dir():
            given += ["--state-dir", str(state_dir)]
        if trial is not None:
            given.append(trial.describe())
        line = " ".join(["benchtui", *given])
        return cls(f"{line} --resume", f"{line} --fresh")


def start_entry(campaign: Campaign, fingerprint: str, programs: dict[str, str], trial: Trial | None) -> Entry:
    """The history's first entry, written with a new run dir."""
    return Entry(
        event="start",
        at=identity_file.now(),
        benchtui=benchtui.__version__,
        fingerprint=fingerprint,
        programs=programs,
        models=[m.name for m in campaign.models],
        sessions_per_model=[campaign.sessions_per_model_count],
        trial=trial,
    )


@dataclass(frozen=True, slots=True)
class Found:
    """How the run in a locked run dir stands against the campaign now asked for."""

    stored: RunIdentity
    changed: list[str]
    """Identity parts that differ (a program's name when its binary or version changed)."""
    growth: Growth | None = None
    """What `--resume` would add (None: nothing, or it cannot grow)."""
    refusal: str = ""
    """Why `--resume` cannot continue it (empty: it can)."""


def compare(run_dir: Path, campaign: Campaign, identity: dict[str, str], programs: dict[str, str]) -> Found:
    """Compare the locked run dir's identity (a growth a crash interrupted settled first) with the
    campaign's; nothing is written but that settling."""
    identity_file.settle(run_dir)
    stored = identity_file.read(run_dir)
    keys = list(dict.fromkeys([*identity, *stored.digests]))
    changed = [key for key in keys if stored.digests.get(key) != identity.get(key)]
    recorded = stored.programs
    moved = [name for name in programs if name in recorded and recorded[name] != programs[name]]
    if moved:
        detail = ", ".join(f"{name} {recorded[name]} -> {programs[name]}" for name in moved)
        return Found(
            stored,
            changed + moved,
            refusal=f"cannot resume {run_dir}: changed since it started: {detail} (every session runs on "
            "the same programs; use --fresh to start over)",
        )
    if not changed:
        return Found(stored, [])
    if TRIAL in changed:
        was = stored.trial
        refusal = (
            f"cannot resume {run_dir}: it is a quick trial ({was.describe()}), never the full campaign: "
            "--fresh starts the full campaign (the trial is moved aside, never deleted)"
            if was is not None
            else f"cannot resume {run_dir} as a quick trial: it holds the full campaign (give the trial "
            "another --state-dir, or --fresh to replace the run, moved aside)"
        )
        return Found(stored, changed, refusal=refusal)
    frozen = identity_file.frozen(run_dir)
    old = campaign_file.load(frozen, require_target=False)
    described = old.identity("")  # the parts a growth may change do not depend on the fingerprint
    if any(described[part] != stored.digests.get(part) for part in GROWABLE):
        return Found(
            stored,
            changed,
            refusal=f"cannot resume {run_dir}: {frozen} does not match the run's identity "
            "(edited by hand?): use --fresh to start over",
        )
    try:
        return Found(stored, changed, growth(old, campaign, changed, str(run_dir)))
    except BadInput as exc:
        return Found(stored, changed, refusal=str(exc))


def refuse_start(run_dir: Path, campaign: Campaign, found: Found, commands: Commands) -> BadInput:
    """Why a start without --resume or --fresh does not touch a run of another identity."""
    if found.growth is not None:
        return BadInput(
            f"{run_dir}: campaign {campaign.name} grew since the run started ({found.growth.describe()}): "
            f"`{commands.resume}` adds that to it, `{commands.fresh}` starts over and spends a new budget"
        )
    if found.stored.trial is not None and TRIAL in found.changed:
        return BadInput(
            f"{run_dir} holds a quick trial of campaign {campaign.name} ({found.stored.trial.describe()}): "
            f"`{commands.fresh}` starts this one (the trial is moved aside, never deleted)"
        )
    why = found.refusal.removeprefix(f"cannot resume {run_dir}: ")
    grows = f"; --resume cannot grow it: {why}" if set(found.changed) <= GROWABLE and why else ""
    return BadInput(
        f"{run_dir} holds another run of campaign {campaign.name} (changed: {', '.join(found.changed)}{grows}): "
        f"`{commands.fresh}` starts over (the old run is moved aside, never deleted) and spends a new budget"
    )


def refuse_unfinished(
    run_dir: Path, check: checkpoint.Checkpoint, plan: list[PlannedSession], commands: Commands
) -> BadInput:
    """An unfinished run of the same campaign, started again without a flag: what to do."""
    ended = len(plan) - len(check.pending(plan))
    ledger = check.ledger
    return BadInput(
        f"{run_dir} holds this campaign, unfinished: {ended} of {len(plan)} sessions ended, "
        f"{fmt(ledger.spent)} of {fmt(ledger.budget)} spent; `{commands.resume}` continues it, "
        f"`{commands.fresh}` starts over and spends a new budget"
    )


def commit(
    run_dir: Path,
    campaign: Campaign,
    found: Found,
    identity: dict[str, str],
    fingerprint: str,
    programs: dict[str, str],
) -> None:
    """Record the growth `found` describes: the grown campaign and its extension, in one commit."""
    assert found.growth is not None
    entry = Entry.model_validate(
        {
            "event": "grow",
            "at": identity_file.now(),
            "benchtui": benchtui.__version__,
            "fingerprint": fingerprint,
            "programs": programs,
            **found.growth.entry(),
        }
    )
    grown = found.stored.grown(identity, entry)
    identity_file.commit_growth(run_dir, campaign.to_toml().encode(), grown)


def reopen(
    run_dir: Path,
    campaign: Campaign,
    plan: list[PlannedSession],
    identity: dict[str, str],
    start: Start,
    commands: Commands,
    *,
    resume: bool,
) -> tuple[checkpoint.Checkpoint, bool, list[str]]:
    """Where the locked run dir stands if it may go on: the same identity, or (`resume`) one the
    campaign grows (committed only once its journal has been read whole); whether it had finished;
    the note saying what a growth added. BadInput (nothing written) for a start without a flag
    that would touch it."""
    found = compare(run_dir, campaign, identity, start.programs)
    if found.changed and not resume:
        raise refuse_start(run_dir, campaign, found, commands)
    if found.refusal:
        raise BadInput(found.refusal)
    check = checkpoint.load(run_dir, campaign, plan)
    if not resume:
        if check.pending(plan):
            raise refuse_unfinished(run_dir, check, plan, commands)
        return check, True, []
    if found.growth is None:
        return check, False, []
    commit(run_dir, campaign, found, identity, start.fingerprint, start.programs)
    return check, False, [f"grew {run_dir}: {found.growth.describe()}"]
