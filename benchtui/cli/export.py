"""`benchtui export [RUN_DIR] --submissions DIR | --board DIR`: finished Top50 runs for the
benchmark's own tools (benchtui/report/export.py)."""

from __future__ import annotations

import sys
from pathlib import Path

from benchtui.cli.args import OneLineParser, add_state_dir
from benchtui.engine import rundir


def parser() -> OneLineParser:
    p = OneLineParser(
        prog="benchtui export",
        description="Write a run dir's finished runs of the benchmark's own Top50 runner (runner kind "
        "top50) for the benchmark's tools: each submission.json byte for byte with a manifest "
        "(label rankable or local:<commit>/<pred>), and/or the public board entries. A folder is "
        "written whole or not at all, and must be new or empty. Reads the run dir only.",
    )
    p.add_argument("run_dir", nargs="?", type=Path, metavar="RUN_DIR", help="default: the latest run")
    p.add_argument(
        "--submissions",
        type=Path,
        metavar="DIR",
        help="DIR/submissions/*.json (for backend_score --local DIR/submissions, benchmark.submit "
        "--predictions FILE) and DIR/manifest.json: [{model, session, attempt, label, sha256, file}]",
    )
    p.add_argument(
        "--board",
        type=Path,
        metavar="DIR",
        help="DIR/<model>--<time>--<id>.json: one public entry per run in the benchmark's board shape "
        "(for check_aggregate.py and backend_score --build-board DIR board.json)",
    )
    add_state_dir(p)
    return p


def main(argv: list[str]) -> int:
    args = parser().parse_args(argv)
    from benchtui.report.export import export

    run_dir = args.run_dir or rundir.latest(rundir.state_dir(args.state_dir), nothing="no run to export")
    done = export(run_dir, submissions=args.submissions, board=args.board)
    for line in done.lines:
        print(f"export: {line}", file=sys.stderr)
    return 0
