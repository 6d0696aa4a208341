"""argparse with the contract's error handling: a bad command line is one line and exit 2."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import NoReturn

from benchtui.core.errors import BadInput


class OneLineParser(argparse.ArgumentParser):
    """For `benchtui` and each of its commands (`prog="benchtui ctl"` says "ctl: …")."""

    def error(self, message: str) -> NoReturn:  # argparse's default prints the whole usage
        command = self.prog.removeprefix("benchtui").strip()
        raise BadInput(f"{command + ': ' if command else ''}{message} (see `{self.prog} --help`)")


def add_state_dir(parser: argparse.ArgumentParser) -> None:
    """`--state-dir DIR`, the same for `benchtui` and every command that finds a run."""
    parser.add_argument(
        "--state-dir",
        type=Path,
        default=None,
        metavar="DIR",
        help="where run dirs live, to find the latest run (default: runs, or BENCHTUI_STATE_DIR)",
    )


def difference_points(text: str) -> float:
    """`--difference POINTS`: a difference in bug rate, in points (10 = ten percentage points),
    returned as a fraction; more than 0, at most 100."""
    import math

    try:
        points = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of points: {text!r}") from None
    if not (math.isfinite(points) and 0 < points <= 100):
        raise argparse.ArgumentTypeError(f"a difference in points, more than 0 and at most 100: {text!r}")
    return points / 100


def add_difference(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--difference",
        type=difference_points,
        default=0.10,
        metavar="POINTS",
        help="the difference in bug rate the power answer asks about, in points (default 10): how many "
        "sessions separate it at 80%% power",
    )
