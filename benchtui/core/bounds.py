"""Bounds on what a campaign may ask for, checked before anything is written or paid.

Names become file names (the run dir, session dirs `<model>-<index>`, `results/<model>.json`,
their `.<name>.tmp` staging files), so each must fit one file-name component (255 bytes on Linux
file systems) with room for what benchtui adds; counts and amounts must stay where the plan fits
in memory and money stays exact (amounts under $1e6 round-trip through TOML floats exactly).
"""

from __future__ import annotations

import unicodedata
from decimal import Decimal
from typing import Any

NAME_MAX_BYTES = 200
"""A run name or a model's file-name form: 255 bytes minus `.`, `.new-<pid>`, `-<index>`, `.json.tmp`."""
TEXT_MAX_CHARS = 500
"""Task names and runner profile names: shown in one line, passed as command arguments."""
MAX_SESSIONS = 1_000_000
"""Sessions in a campaign (all models): the plan is built in memory (~200 MB at this bound)."""
MAX_PARALLELISM = 10_000
"""Sessions at once: each real session holds processes and file descriptors."""
MAX_USD = 1_000_000
"""Budgets, and so every reservation and charge that must fit in them."""
MAX_USD_PER_MTOK = 1_000_000
"""Prices per million tokens (the dearest models cost a few hundred dollars)."""
MAX_OUTPUT_TOKENS = 100_000_000


def check_text(value: str, what: str, max_chars: int = TEXT_MAX_CHARS) -> str:
    """No control characters (NUL, newline, escape codes), valid Unicode, bounded length."""
    bad = next((c for c in value if unicodedata.category(c) in ("Cc", "Cs")), None)
    if bad is not None:
        raise ValueError(f"{what} contains the control character {bad!r}")
    if len(value) > max_chars:
        raise ValueError(f"{what} is {len(value)} characters long (at most {max_chars})")
    return value


def check_file_name(value: str, what: str) -> str:
    """`check_text`, and the name's UTF-8 bytes fit a file-name component with benchtui's additions."""
    check_text(value, what, max_chars=NAME_MAX_BYTES)
    size = len(value.encode())
    if size > NAME_MAX_BYTES:
        raise ValueError(f"{what} is {size} bytes long as a file name (at most {NAME_MAX_BYTES})")
    return value


def sane_amount(value: Any) -> bool:
    """A dollar amount read back from a run-dir file someone may have edited: a finite, non-negative
    number small enough for exact nano-dollar Decimals (an overspending `enforce = false` run may
    pass the budget bound, so allow a margin above it)."""
    if isinstance(value, bool) or not isinstance(value, int | float | Decimal):
        return False
    try:
        return 0 <= value <= MAX_USD * 1000  # a float NaN fails both comparisons, inf the second
    except ArithmeticError:  # comparing a Decimal NaN raises
        return False
