"""`benchtui report [RUN_DIR ...] [--format text|json|html] [-o FILE] [--public] [--pool-anyway]`."""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path

from benchtui.cli.args import OneLineParser, add_difference, add_state_dir
from benchtui.core.atomic import atomic_write
from benchtui.core.errors import BadInput
from benchtui.engine import rundir
from benchtui.report import CampaignReport, build


def parser() -> OneLineParser:
    p = OneLineParser(
        prog="benchtui report",
        description="Leaderboard with 95% intervals, pairwise tests and a fairness audit of one "
        "campaign; several run dirs are pooled when their sessions were given the same (target, "
        "prompts, budgets, runner, protocol), even of different campaigns. Reads only.",
    )
    p.add_argument("run_dirs", nargs="*", type=Path, metavar="RUN_DIR", help="default: the latest run")
    p.add_argument(
        "--format",
        choices=("text", "json", "html"),
        help="default: text (--public: json, or html for an -o FILE ending .html)",
    )
    p.add_argument("-o", "--output", type=Path, metavar="FILE", help="write here instead of stdout")
    p.add_argument(
        "--pool-anyway",
        action="store_true",
        help="pool runs whose sessions were not given the same (each difference a finding of the audit)",
    )
    p.add_argument(
        "--public",
        action="store_true",
        help="the public board: aggregates only (json, or a self-contained html page), nothing that names "
        "a buggy rule, a certificate, an instance, a hypothesis, a prompt, an observation or a trajectory",
    )
    p.add_argument(
        "--check-public",
        type=Path,
        metavar="FILE",
        help="check a public board file (json or html) before publishing it: exit 0 when it holds "
        "aggregates only, 2 naming what it should not hold (with RUN_DIRs: their rules and texts too)",
    )
    add_difference(p)
    add_state_dir(p)
    return p


def render(report: CampaignReport, fmt: str) -> str:
    if fmt == "json":
        try:  # strict JSON: a non-finite number that got through is refused, never written as NaN
            return json.dumps(report.to_json(), indent=1, ensure_ascii=False, allow_nan=False) + "\n"
        except ValueError:
            raise BadInput("report: the run holds a number that is not finite (tampered?)") from None
    if fmt == "html":
        from benchtui.report.html import render as html

        return html(report)
    from benchtui.report.text import render as text

    return text(report)


def main(argv: list[str]) -> int:
    args = parser().parse_args(argv)
    if args.check_public is not None:
        from benchtui.cli.public import check_file

        return check_file(args.check_public, args.run_dirs)
    run_dirs = args.run_dirs or [rundir.latest(rundir.state_dir(args.state_dir), nothing="no run to report")]
    out = args.output
    fmt = args.format or ("text" if not args.public else "html" if out and out.suffix == ".html" else "json")
    if args.public and fmt == "text":
        raise BadInput("report: --public writes json or html, not text")
    if out is not None:
        check_output(out, run_dirs)
    report = build(run_dirs, pool_anyway=args.pool_anyway, difference=args.difference)
    if args.public:
        from benchtui.cli.public import public_text

        text = public_text(report, fmt)
    else:
        text = render(report, fmt)
    if out is None:
        sys.stdout.write(text)
    else:
        write_output(out, text.encode())
        runs = f"{len(run_dirs)} run{'s' if len(run_dirs) != 1 else ''}"
        print(
            f"report: wrote {out} ({'public ' if args.public else ''}{fmt}, {len(text.encode())} bytes, "
            f"from {runs})",
            file=sys.stderr,
        )
    return 0


def check_output(out: Path, run_dirs: list[Path]) -> None:
    """`-o FILE` may only be a new or a regular file outside every run dir (the ones reported and
    any other: a folder holding a campaign.toml and a journal or ledger); never a device, a FIFO
    or a folder (atomic replacement would have turned those into regular files)."""
    for path in {out.absolute(), out.resolve()}:
        for run in run_dirs:  # the report never writes into a run dir, even when asked to
            if path.parent.is_relative_to(run.resolve()):
                raise BadInput(f"report: {out} is inside the run dir {run}: write it elsewhere")
        for folder in path.parents:
            if _is_run_dir(folder):
                raise BadInput(f"report: {out} is inside the run dir {folder}: write it elsewhere")
        try:
            mode = os.lstat(path).st_mode if path == out.absolute() else os.stat(path).st_mode
        except FileNotFoundError:
            continue
        except OSError as exc:
            raise BadInput(f"report: {out}: {exc.strerror}") from None
        if not (stat.S_ISREG(mode) or stat.S_ISLNK(mode)):
            raise BadInput(f"report: {out} exists and is not a regular file: write it elsewhere")
    if not out.resolve().parent.is_dir():
        raise BadInput(f"report: {out.parent} is not a directory")


def _is_run_dir(folder: Path) -> bool:
    markers = (rundir.CAMPAIGN, "sessions.jsonl", "ledger.toml")
    return sum((folder / name).is_file() for name in markers) >= 2


def write_output(out: Path, data: bytes) -> None:
    """Replace `out` atomically (through a link: its target); no temporary file left on failure."""
    target = out.resolve()
    try:
        atomic_write(target, data)
    except OSError as exc:
        Path(target.parent, f".{target.name}.tmp").unlink(missing_ok=True)
        raise BadInput(f"report: cannot write {out}: {exc.strerror or exc}") from None
