"""`benchtui verify FILE`: re-check certificates from a file and say the verdict in the exit status."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import trio

from benchtui.core import registry
from benchtui.core.certificates import NoCertificate, certificates_in
from benchtui.core.errors import BadInput
from benchtui.core.inputs import read_text
from benchtui.core.target import TargetKind, TargetTools, Verdict, malformed
from benchtui.runners.kit.bubblewrap import bwrap_executable
from benchtui.runners.kit.oneshot import OneShot

# -- CLI: benchtui verify CERT.json [--pred PATH] ---------------------------------------------------
EXIT_ACCEPTED, EXIT_REJECTED, EXIT_BAD_INPUT, EXIT_INCONCLUSIVE = 0, 1, 2, 4
MAX_BYTES = 256 << 20
"""Of the file to verify: a long session's trajectory is some MB; a larger file is not ours."""


def _target(campaign: Path | None) -> TargetKind:
    """The target to verify against: the campaign's `[target]` (a run dir's frozen campaign.toml
    too), else problem-reductions."""
    if campaign is None:
        return registry.create_target(registry.validate_target({}))
    from benchtui.engine import campaign as campaign_file  # the front end may read a campaign

    return registry.create_target(campaign_file.load(campaign, require_target=False).target)


def main_verify(argv: list[str]) -> int:
    """Re-check certificates: a certificate JSON, any file benchtui wrote (a trajectory,
    attempt-N.certificates.json, outcomes, results), or any log with CERTIFICATE_START blocks."""
    import argparse

    p = argparse.ArgumentParser(
        prog="benchtui verify",
        description=main_verify.__doc__,
        epilog="Exit status: 0 a bug is confirmed, 1 rejected, 4 inconclusive, 2 bad input.",
    )
    p.add_argument(
        "certificate",
        type=Path,
        help="a certificate JSON, a file benchtui wrote, or a log with certificate blocks",
    )
    p.add_argument("--pred", default="pred", help="the pred executable (default: pred on PATH)")
    p.add_argument("--timeout", type=float, default=60.0, help="seconds per pred call (default 60)")
    p.add_argument(
        "--campaign",
        type=Path,
        help="verify against this campaign's [target] (a run dir's campaign.toml too; default: "
        "problem-reductions)",
    )
    p.add_argument("--json", action="store_true", help="print verdicts as JSON lines")
    args = p.parse_args(argv)
    try:  # a regular file only (a FIFO would block, a device never end), bounded
        text = read_text(args.certificate, MAX_BYTES, "the file to verify")
        target = _target(args.campaign)
    except FileNotFoundError as exc:
        print(f"benchtui verify: {exc.filename or args.certificate}: no such file", file=sys.stderr)
        return EXIT_BAD_INPUT
    except (BadInput, registry.UnknownKind) as exc:
        print(f"benchtui verify: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    try:
        found = certificates_in(text, target.looks_like)
    except NoCertificate as exc:
        print(f"benchtui verify: {args.certificate}: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except RecursionError:
        print(f"benchtui verify: {args.certificate}: JSON nested too deeply to read", file=sys.stderr)
        return EXIT_BAD_INPUT
    toolbox = target.toolbox({"pred": args.pred} if args.pred else {})
    for name, given in toolbox.missing.items():
        how = next((p.install for p in toolbox.declared if p.name == name and p.install), f"install {name}")
        print(f"benchtui verify: {name} not found ({given!r}): {how}, or give --pred PATH", file=sys.stderr)
        return EXIT_BAD_INPUT
    tools = TargetTools(toolbox.found, args.timeout, OneShot(sandboxed=bwrap_executable() is not None))
    verdicts: list[Verdict] = []
    for item in found:
        cert, problem = (item, "") if isinstance(item, dict) else target.parse(item)
        verdict = trio.run(target.verify, cert, tools) if cert is not None else malformed(problem)
        verdicts.append(verdict)
        if args.json:
            print(json.dumps(verdict.to_json(), default=str))
        else:
            print(f"{verdict.status.upper()}: {verdict.reason}")
    if any(v.accepted for v in verdicts):
        return EXIT_ACCEPTED
    return EXIT_INCONCLUSIVE if all(v.status == "inconclusive" for v in verdicts) else EXIT_REJECTED
