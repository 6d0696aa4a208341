"""identity.json: what a run is, and how it came to be.

The file holds a short hash per identity part (`--resume` compares them; the report pools runs
by what they mean) and, under `history`, the run's lineage in the clear: its start and each
extension, with when, on which environment fingerprint and target programs (pred's version and
sha256), by which benchtui, what it added, and whether the run is a quick trial (`--limit`,
`--models`). Run dirs of earlier releases hold the hashes alone: a run with no history.

A campaign grows in three writes: the grown campaign beside the frozen copy (`campaign.toml.next`),
then this file (the commit: its last entry names that copy's sha256), then the copy renamed into
place. A crash in between is settled by the next start that locks the run dir (`settle`), and a
reader in between reads the copy this file names (`frozen`), so the two always agree.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from benchtui.core import inputs
from benchtui.core.atomic import atomic_write, fsync_dir
from benchtui.core.errors import BadInput

FILE = "identity.json"
CAMPAIGN = "campaign.toml"
NEXT = "campaign.toml.next"
HISTORY = "history"
MAX_ENTRIES = 1000
"""Extensions a run may have (each a few hundred bytes: the file stays within its 1 MiB read)."""


class Trial(BaseModel):
    """A quick trial (`--limit N`, `--models a,b`): never to be mistaken for the full campaign."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    limit: int | None = Field(default=None, gt=0)
    """Sessions per model, at most."""
    models: list[str] | None = None
    """The models it ran, of the campaign's."""

    def describe(self) -> str:
        """`--limit 2 --models a,b`: how it was asked for."""
        parts = [f"--limit {self.limit}"] if self.limit is not None else []
        return " ".join([*parts, *([f"--models {','.join(self.models)}"] if self.models else [])])


class Entry(BaseModel):
    """One event of a run's history: its start, or an extension on `--resume`."""

    model_config = ConfigDict(extra="allow", frozen=True)

    event: Literal["start", "grow"]
    at: str
    """When (ISO 8601, UTC, to the second)."""
    benchtui: str = ""
    """The version of benchtui that wrote it."""
    fingerprint: str = ""
    """The environment fingerprint its sessions get (the same for every extension)."""
    programs: dict[str, str] = Field(default_factory=dict)
    """The target's programs, `<version>@sha256:<binary>` (`{"pred": "pred 0.5.0@sha256:…"}`)."""
    models: list[str] = Field(default_factory=list)
    """The start: every model; an extension: the models it added, in order."""
    sessions_per_model: list[int] = Field(default_factory=list)
    """The start: [sessions per model]; an extension that added sessions: [before, after]."""
    budget: dict[str, list[str]] = Field(default_factory=dict)
    """An extension: the amounts it changed, [before, after] (`total_usd`, `per_model_usd`)."""
    trial: Trial | None = None
    """The start of a quick trial: how it was cut from the campaign."""
    campaign_sha256: str = ""
    """An extension: the sha256 of the frozen campaign it wrote (how a crash is settled)."""

    def to_json(self) -> dict[str, Any]:
        return self.model_dump(mode="json", exclude_defaults=True) | {"event": self.event, "at": self.at}


def now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass(frozen=True, slots=True)
class RunIdentity:
    digests: dict[str, str]
    """A short hash per identity part (`models`, `sessions`, `budget`, …)."""
    history: tuple[Entry, ...] = field(default=())

    @property
    def trial(self) -> Trial | None:
        start = self.history[0] if self.history and self.history[0].event == "start" else None
        return start.trial if start else None

    @property
    def programs(self) -> dict[str, str]:
        """The target's programs as last recorded (every entry agrees: a change is refused)."""
        return next((e.programs for e in reversed(self.history) if e.programs), {})

    @property
    def extensions(self) -> tuple[Entry, ...]:
        return tuple(e for e in self.history if e.event == "grow")

    def joined(self, model: str) -> Entry | None:
        """The extension that added `model` (None: it was there from the start)."""
        return next((e for e in self.extensions if model in e.models), None)

    def grown(self, digests: dict[str, str], entry: Entry) -> RunIdentity:
        return replace(self, digests=dict(digests), history=(*self.history, entry))

    def to_bytes(self) -> bytes:
        data: dict[str, Any] = dict(self.digests)
        if self.history:
            data[HISTORY] = [e.to_json() for e in self.history]
        return json.dumps(data, indent=1, ensure_ascii=False).encode()


def read(run_dir: Path) -> RunIdentity:
    """The run's identity.json; BadInput in one line when it is missing or not one benchtui wrote."""
    path = run_dir / FILE
    try:
        data = inputs.loads_json(inputs.read_text(path, inputs.SMALL_MAX_BYTES, "the identity"))
    except FileNotFoundError:
        raise BadInput(f"{path}: missing; use --fresh") from None
    except ValueError as exc:
        raise BadInput(f"{path}: unreadable ({exc}); use --fresh") from None
    if not isinstance(data, dict):
        raise BadInput(f"{path}: corrupted (not a table of hashes); use --fresh")
    history = data.pop(HISTORY, [])
    if not all(isinstance(v, str) for v in data.values()):
        raise BadInput(f"{path}: corrupted (not a table of hashes); use --fresh")
    if not isinstance(history, list) or len(history) > MAX_ENTRIES:
        raise BadInput(
            f"{path}: corrupted history (not a list of at most {MAX_ENTRIES} entries); use --fresh"
        )
    try:
        entries = tuple(Entry.model_validate(e) for e in history)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"])
        raise BadInput(f"{path}: corrupted history ({where}: {err['msg']}); use --fresh") from None
    return RunIdentity(data, entries)


def _sha256(path: Path) -> str | None:
    try:
        return inputs.sha256(path, "the frozen campaign")
    except (FileNotFoundError, BadInput):
        return None


def _pending(run_dir: Path, identity: RunIdentity) -> bool:
    """A growth committed (identity.json names the copy at NEXT) whose copy is not yet in place."""
    expected = identity.history[-1].campaign_sha256 if identity.history else ""
    return bool(expected) and _sha256(run_dir / NEXT) == expected != _sha256(run_dir / CAMPAIGN)


def frozen(run_dir: Path) -> Path:
    """The frozen campaign the identity describes: `campaign.toml`, or the grown copy beside it that
    a crash left before its rename (read-only: `settle` puts it in place)."""
    if (run_dir / NEXT).is_file():
        with contextlib.suppress(BadInput):
            if _pending(run_dir, read(run_dir)):
                return run_dir / NEXT
    return run_dir / CAMPAIGN


def settle(run_dir: Path) -> None:
    """Under the run dir's lock: finish a growth a crash interrupted after its commit, or drop the
    grown copy of one that never committed."""
    if not os.path.lexists(run_dir / NEXT):
        return
    if _pending(run_dir, read(run_dir)):
        os.replace(run_dir / NEXT, run_dir / CAMPAIGN)
    else:
        (run_dir / NEXT).unlink()
    fsync_dir(run_dir)


def commit_growth(run_dir: Path, campaign_toml: bytes, identity: RunIdentity) -> None:
    """Write a grown campaign and its identity (`identity`'s last entry is the extension), so that a
    crash at any instant leaves the run as it was or as grown: the copy, the commit, the rename."""
    sha = hashlib.sha256(campaign_toml).hexdigest()
    last = identity.history[-1].model_copy(update={"campaign_sha256": sha})
    committed = replace(identity, history=(*identity.history[:-1], last))
    atomic_write(run_dir / NEXT, campaign_toml)
    atomic_write(run_dir / FILE, committed.to_bytes())
    os.replace(run_dir / NEXT, run_dir / CAMPAIGN)
    fsync_dir(run_dir)
