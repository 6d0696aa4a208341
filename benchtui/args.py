"""argparse with the contract's error handling: a bad command line is one line and exit 2."""

from __future__ import annotations

import argparse
from typing import NoReturn

from benchtui.errors import BadInput


class OneLineParser(argparse.ArgumentParser):
    """For `benchtui` and each of its commands (`prog="benchtui ctl"` says "ctl: …")."""

    def error(self, message: str) -> NoReturn:  # argparse's default prints the whole usage
        command = self.prog.removeprefix("benchtui").strip()
        raise BadInput(f"{command + ': ' if command else ''}{message} (see `{self.prog} --help`)")
