"""The real pred's recorded answers (`../shared/pred-transcripts/`) behind a replaying stand-in.

The transcripts are read where they are at test time (never copied into the repository); a test
that needs them skips with a reason where the folder is absent (a fresh clone).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from support import ROOT

#: `../shared/pred-transcripts` (BENCHTUI_SHARED names another `shared`, e.g. from a git worktree).
TRANSCRIPTS = Path(os.environ.get("BENCHTUI_SHARED") or ROOT.parent / "shared") / "pred-transcripts"
STAND_IN = Path(__file__).with_name("stand_in_pred.py").resolve()
BUILDS = ("8df8ac04", "v0.5.0", "4bed271c")
#: A replay miss: the stand-in's exit status (pred itself exits 0, 1 or 2).
NOT_RECORDED = 97


def need_transcripts() -> Path:
    if not (TRANSCRIPTS / "README.md").is_file():
        pytest.skip(f"the real pred's transcripts are not here ({TRANSCRIPTS}): a fresh clone has none")
    return TRANSCRIPTS


def replaying_pred(where: Path, build: str) -> Path:
    """An executable named `pred` in `where` answering exactly as the real `build` did."""
    transcript = need_transcripts() / f"{build}.jsonl"
    where.mkdir(parents=True, exist_ok=True)
    pred = where / "pred"
    pred.write_text(
        f"#!/bin/sh\nSTAND_IN_PRED_TRANSCRIPT='{transcript}' exec '{sys.executable}' '{STAND_IN}' \"$@\"\n"
    )
    pred.chmod(0o755)
    return pred


#: pred 0.3.0's recorded answers (`--help`, `list`, `export-graph`: the folder's README).
PRED_0_3 = "pred-0.3.0"


def need_old_cli(name: str = PRED_0_3) -> Path:
    folder = TRANSCRIPTS / name
    if not (folder / "README.md").is_file():
        pytest.skip(f"{name}'s recorded answers are not here ({folder}): a fresh clone has none")
    return folder


def old_cli_pred(where: Path, build: str, old: str = PRED_0_3) -> Path:
    """A `pred` in `where` answering `--version`, `--help`, `list`, `list --rules`, `export-graph`
    and `extract` as the older CLI `old` did, and `reduce`/`solve`/`evaluate`/`create` as `build`."""
    folder = need_old_cli(old)
    transcript = need_transcripts() / f"{build}.jsonl"
    where.mkdir(parents=True, exist_ok=True)
    pred = where / "pred"
    pred.write_text(
        f"#!/bin/sh\nSTAND_IN_PRED_OLD_CLI='{folder}' STAND_IN_PRED_TRANSCRIPT='{transcript}' "
        f"exec '{sys.executable}' '{STAND_IN}' \"$@\"\n"
    )
    pred.chmod(0o755)
    return pred


def doctored_pred(where: Path, build: str, answers: dict[str, dict[str, Any]]) -> Path:
    """A `pred` in `where` replaying `build` except for the subcommands `answers` doctors
    (`{"reduce": {"stderr": "...", "exit": 101}}`; `"signal": 9` kills it; `"hang": true`)."""
    pred = replaying_pred(where, build)
    doctor = where / "answers.json"
    doctor.write_text(json.dumps(answers))
    transcript = need_transcripts() / f"{build}.jsonl"
    pred.write_text(
        f"#!/bin/sh\nSTAND_IN_PRED_TRANSCRIPT='{transcript}' STAND_IN_PRED_ANSWERS='{doctor}' "
        f"exec '{sys.executable}' '{STAND_IN}' \"$@\"\n"
    )
    return pred


def expected_verdicts() -> list[tuple[str, str, dict[str, Any]]]:
    """(certificate name, build, its entry in certificates/expected.json), for every entry."""
    folder = need_transcripts() / "certificates"
    table = json.loads((folder / "expected.json").read_text())
    return [(name, entry["pred"], entry) for name, entries in table.items() for entry in entries]


def public_certificate(name: str) -> dict[str, Any]:
    return json.loads((need_transcripts() / "certificates" / name).read_text())


def expected_cases() -> list[tuple[str, str]]:
    """(certificate, build) pairs for parametrising (empty where the transcripts are absent)."""
    table = TRANSCRIPTS / "certificates" / "expected.json"
    if not table.is_file():
        return []
    return [(name, e["pred"]) for name, entries in json.loads(table.read_text()).items() for e in entries]
