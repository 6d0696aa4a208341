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
