"""`benchtui report [RUN_DIR ...] [--format text|json|html] [-o FILE]`."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from benchtui.cli.args import OneLineParser, add_state_dir
from benchtui.core.atomic import atomic_write
from benchtui.core.errors import BadInput
from benchtui.engine import rundir
from benchtui.report import CampaignReport, build


def parser() -> OneLineParser:
    p = OneLineParser(
        prog="benchtui report",
        description="Leaderboard with 95% intervals, pairwise tests and a fairness audit of one "
        "campaign; several run dirs of the same campaign identity are pooled. Reads only.",
    )
    p.add_argument("run_dirs", nargs="*", type=Path, metavar="RUN_DIR", help="default: the latest run")
    p.add_argument("--format", choices=("text", "json", "html"), default="text", help="default: text")
    p.add_argument("-o", "--output", type=Path, metavar="FILE", help="write here instead of stdout")
    add_state_dir(p)
    return p


def render(report: CampaignReport, fmt: str) -> str:
    if fmt == "json":
        return json.dumps(report.to_json(), indent=1, ensure_ascii=False) + "\n"
    if fmt == "html":
        from benchtui.report.html import render as html

        return html(report)
    from benchtui.report.text import render as text

    return text(report)


def main(argv: list[str]) -> int:
    args = parser().parse_args(argv)
    run_dirs = args.run_dirs or [rundir.latest(rundir.state_dir(args.state_dir))]
    out = args.output
    if out is not None:
        for run in run_dirs:  # the report never writes into a run dir, even when asked to
            if out.resolve().parent.is_relative_to(run.resolve()):
                raise BadInput(f"report: {out} is inside the run dir {run}: write it elsewhere")
        if not out.resolve().parent.is_dir():
            raise BadInput(f"report: {out.parent} is not a directory")
    text = render(build(run_dirs), args.format)
    if out is None:
        sys.stdout.write(text)
    else:
        atomic_write(out, text.encode())
    return 0
