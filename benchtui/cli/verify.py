"""`benchtui verify CERT.json`: re-check certificates from a file and say the verdict in the exit status."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from benchtui.core.errors import BadInput
from benchtui.core.inputs import read_text
from benchtui.targets.problem_reductions.certificate import Verdict, parse_block
from benchtui.targets.problem_reductions.drivers import INSTALL_PRED, resolve_pred, verify
from benchtui.targets.problem_reductions.sources import NoCertificate, certificates_in

# -- CLI: benchtui verify CERT.json [--pred PATH] ---------------------------------------------------
EXIT_ACCEPTED, EXIT_REJECTED, EXIT_BAD_INPUT, EXIT_INCONCLUSIVE = 0, 1, 2, 4
MAX_BYTES = 256 << 20
"""Of the file to verify: a long session's trajectory is some MB; a larger file is not ours."""


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
    p.add_argument("--json", action="store_true", help="print verdicts as JSON lines")
    args = p.parse_args(argv)
    try:  # a regular file only (a FIFO would block, a device never end), bounded
        text = read_text(args.certificate, MAX_BYTES, "the file to verify")
    except FileNotFoundError:
        print(f"benchtui verify: {args.certificate}: no such file", file=sys.stderr)
        return EXIT_BAD_INPUT
    except BadInput as exc:
        print(f"benchtui verify: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    try:
        found = certificates_in(text)
    except NoCertificate as exc:
        print(f"benchtui verify: {args.certificate}: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except RecursionError:
        print(f"benchtui verify: {args.certificate}: JSON nested too deeply to read", file=sys.stderr)
        return EXIT_BAD_INPUT
    pred = resolve_pred(args.pred)
    if not (os.path.isabs(pred) and os.access(pred, os.X_OK)):
        print(
            f"benchtui verify: pred not found ({args.pred!r}): {INSTALL_PRED}, or give --pred PATH",
            file=sys.stderr,
        )
        return EXIT_BAD_INPUT
    verdicts = []
    for item in found:
        cert, problem = (item, "") if isinstance(item, dict) else parse_block(item)
        verdict = (
            verify(cert, pred=pred, timeout=args.timeout)
            if cert is not None
            else Verdict("rejected", f"malformed certificate: {problem}", {"cause": "malformed"})
        )
        verdicts.append(verdict)
        if args.json:
            print(json.dumps(verdict.to_json(), default=str))
        else:
            print(f"{verdict.status.upper()}: {verdict.reason}")
    if any(v.accepted for v in verdicts):
        return EXIT_ACCEPTED
    return EXIT_INCONCLUSIVE if all(v.status == "inconclusive" for v in verdicts) else EXIT_REJECTED
