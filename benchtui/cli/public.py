"""`benchtui report --public` and `--check-public FILE`: the public board, written only when its
guard passes on the very bytes to be written (report/public_guard.py)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from benchtui.core import inputs
from benchtui.core.errors import BadInput
from benchtui.report import CampaignReport
from benchtui.report.public import board
from benchtui.report.public_guard import Secrets, check, secrets_of
from benchtui.report.public_html import render
from benchtui.report.runs import read_runs

MAX_BOARD_BYTES = 64 * 1024 * 1024


def public_text(report: CampaignReport, fmt: str) -> str:
    """The public board as `fmt` (json, html), checked: BadInput (nothing written) if it fails."""
    if fmt not in ("json", "html"):
        raise BadInput(f"report: --public writes json or html, not {fmt}")
    made = board(report)
    text = (
        json.dumps(made.model_dump(mode="json"), indent=1, ensure_ascii=False, allow_nan=False) + "\n"
        if fmt == "json"
        else render(made)
    )
    refuse(check(text, secrets_of(report.runs)), "report: refused to write the public board")
    return text


def refuse(problems: list[str], what: str) -> None:
    if problems:
        more = f"; and {len(problems) - 3} more" if len(problems) > 3 else ""
        raise BadInput(f"{what}: {'; '.join(problems[:3])}{more}")


def check_file(path: Path, run_dirs: list[Path]) -> int:
    """`--check-public FILE [RUN_DIR ...]`: exit 0 when the file may be published."""
    try:
        text = inputs.read_text(path, MAX_BOARD_BYTES, "a public board")
    except FileNotFoundError:
        raise BadInput(f"report: {path}: no such file") from None
    secrets: Secrets | None = secrets_of(read_runs(run_dirs)) if run_dirs else None
    refuse(check(text, secrets), f"report: {path} is not publishable")
    against = f", and names nothing its {len(run_dirs)} run(s) know" if run_dirs else ""
    print(f"report: {path} holds aggregates only (the board's schema{against})", file=sys.stderr)
    return 0
