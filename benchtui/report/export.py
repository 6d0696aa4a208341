"""`benchtui export`: a run dir's finished Top50 runs, for the benchmark's own tools.

`--submissions DIR`: each finished run's `submission.json` byte for byte as
`DIR/submissions/<file>.json` (the scorer, `backend_score --local DIR/submissions OUT`, reads
every `*.json` beneath the folder it is given; `benchmark.submit --predictions FILE` takes one),
and `DIR/manifest.json` beside it, outside that folder: `[{model, session, attempt, label,
sha256, file}]`, `file` relative to DIR. `--board DIR`: one public entry per finished run its
runner certified (the scorer's board skips the others) in the benchmark's board shape, `DIR/<slug>.json` (what `check_aggregate.py` guards and
`backend_score --build-board DIR board.json` ranks).

A folder is written whole or not at all: built under a temporary name beside it, every file
fsynced, then renamed into place. DIR must be new or empty: an existing folder with anything in
it is refused (nothing is overwritten), as is one inside a run dir.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchtui.core.atomic import atomic_write, fsync_dir
from benchtui.core.errors import BadInput
from benchtui.report import top50_runs
from benchtui.report.top50_runs import Top50Run

MANIFEST = "manifest.json"
SUBMISSIONS = "submissions"


@dataclass(frozen=True, slots=True)
class Exported:
    lines: list[str]
    """What was written and what was left out, one line each (for stderr)."""
    runs: list[Top50Run]


def export(run_dir: Path, *, submissions: Path | None = None, board: Path | None = None) -> Exported:
    if submissions is None and board is None:
        raise BadInput("export: say what to write: --submissions DIR and/or --board DIR")
    if submissions is not None and board is not None and submissions.absolute() == board.absolute():
        raise BadInput("export: --submissions and --board need two folders")
    found = top50_runs.read([run_dir])
    finished = [r for r in found.runs if r.finished]
    lines = [_left_out(r) for r in found.runs if not r.finished]
    lines += [f"left out {m.session} (attempt {m.attempt}, {m.state}): no submission" for m in found.missing]
    if not finished:
        why = "; ".join(lines[:3]) or "no session of the top50 runner kind ran"
        raise BadInput(f"export: {run_dir} has no finished Top50 run to export ({why})")
    if board is not None and not any(r.counted for r in finished):
        raise BadInput(f"export: {run_dir} has no finished run its runner certified: no board entry to write")
    targets = [d for d in (submissions, board) if d is not None]
    for target in targets:
        check_target(target, run_dir)
    if submissions is not None:
        write_folder(submissions, submission_files(finished))
        lines += [
            f"{submissions / SUBMISSIONS / top50_runs.file_name(n, r)}: {r.model} {r.session} attempt {r.attempt}, "
            f"{r.label}, {r.score.bugs} bugs"
            for n, r in enumerate(finished, 1)
        ]
        lines.append(f"{submissions / MANIFEST}: {len(finished)} runs")
    if board is not None:
        certified = [r for r in finished if r.counted]
        lines += [
            f"left off the board {r.session} (attempt {r.attempt}): the runner did not certify it "
            "(the scorer counts none of it, its board shows none)"
            for r in finished
            if not r.counted
        ]
        write_folder(board, board_files(certified))
        lines.append(f"{board}: {len(certified)} public entries (board shape)")
    return Exported(lines, finished)


def _left_out(run: Top50Run) -> str:
    sub = run.sub
    why = sub.run_error[:160] if sub.run_error else f"{sub.done}/{sub.planned} episodes"
    return f"left out {run.session} (attempt {run.attempt}, {run.state}, {sub.status}): {why}"


def manifest(runs: list[Top50Run]) -> list[dict[str, Any]]:
    return [
        {
            "model": r.model,
            "session": r.session,
            "attempt": r.attempt,
            "label": r.label,
            "sha256": r.sha256,
            "file": f"{SUBMISSIONS}/{top50_runs.file_name(n, r)}",
        }
        for n, r in enumerate(runs, 1)
    ]


def submission_files(runs: list[Top50Run]) -> dict[str, bytes]:
    files = {f"{SUBMISSIONS}/{top50_runs.file_name(n, r)}": r.data for n, r in enumerate(runs, 1)}
    files[MANIFEST] = (json.dumps(manifest(runs), indent=1) + "\n").encode()
    return files


def board_files(runs: list[Top50Run]) -> dict[str, bytes]:
    files: dict[str, bytes] = {}
    for run in runs:
        name = f"{top50_runs.board_slug(run)}.json"
        if name in files:  # the same file twice (a run dir copied into itself?): one entry
            continue
        files[name] = (json.dumps(top50_runs.board_entry(run), indent=2) + "\n").encode()
    return files


def check_target(target: Path, run_dir: Path) -> None:
    """A new or empty folder, outside every run dir, whose parent exists."""
    where = target.absolute()
    if where.parent.resolve().is_relative_to(run_dir.resolve()) or where.resolve().is_relative_to(
        run_dir.resolve()
    ):
        raise BadInput(f"export: {target} is inside the run dir {run_dir}: write it elsewhere")
    if not where.parent.is_dir():
        raise BadInput(f"export: {target.parent} is not a folder")
    if where.is_symlink():
        raise BadInput(f"export: {target} is a symbolic link: name a new folder")
    if where.exists():
        if not where.is_dir():
            raise BadInput(f"export: {target} exists and is not a folder: name a new one")
        try:
            taken = next(os.scandir(where), None) is not None
        except OSError as exc:
            raise BadInput(f"export: {target}: {exc.strerror or exc}") from None
        if taken:
            raise BadInput(
                f"export: {target} exists and is not empty: name a new folder (nothing was written)"
            )


def write_folder(target: Path, files: dict[str, bytes]) -> None:
    """`target` with exactly `files` (relative names), whole or not at all."""
    where = target.absolute()
    staging = where.with_name(f".{where.name}.export-{uuid.uuid4().hex[:8]}")
    try:
        staging.mkdir()
        folders = {staging}
        for name, data in files.items():
            path = staging / name
            path.parent.mkdir(parents=True, exist_ok=True)
            folders.add(path.parent)
            atomic_write(path, data)  # durable before the rename makes it visible
        for folder in folders:
            fsync_dir(folder)
        os.rename(staging, where)  # over an empty folder: replaced; one with content: refused
        fsync_dir(where.parent)
    except OSError as exc:
        with contextlib.suppress(OSError):
            shutil.rmtree(staging)
        raise BadInput(f"export: cannot write {target}: {exc.strerror or exc}") from None
    except BaseException:
        with contextlib.suppress(OSError):
            shutil.rmtree(staging)
        raise
