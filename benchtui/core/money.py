"""Exact money: Decimal dollars quantised to nano-dollars, rounded up (over-count, never under)."""

from __future__ import annotations

from decimal import ROUND_CEILING, ROUND_FLOOR, Decimal

ZERO = Decimal(0)
NANO = Decimal("1e-9")
MTOK = Decimal(1_000_000)


def usd(value: Decimal | int | float | str) -> Decimal:
    """Quantise to nano-dollars; floats go through their shortest repr (TOML 0.03 is 0.03)."""
    if isinstance(value, float):
        value = repr(value)
    return Decimal(value).quantize(NANO, rounding=ROUND_CEILING)


def usd_floor(value: Decimal) -> Decimal:
    """An equal share, rounded down to the nano-dollar: M shares never add up past the whole
    (0.20 / 3 at 28 digits is 0.0666…67, and three of those exceed 0.20)."""
    return value.quantize(NANO, rounding=ROUND_FLOOR)


def token_cost(tokens: int, usd_per_mtok: Decimal) -> Decimal:
    return usd(tokens * usd_per_mtok / MTOK)


def to_float(value: Decimal) -> float:
    """For TOML/JSON: nano-quantised amounts below $1e6 round-trip exactly through float repr."""
    return float(value)


def fmt(value: Decimal) -> str:
    """Human display: $0.1234."""
    return f"${value:.4f}"


def fmt_exact(value: Decimal) -> str:
    """Messages: every digit that matters, at least cents ($0.10, $0.066666666, $2.50)."""
    whole, _, cents = format(abs(value).normalize(), "f").partition(".")
    return f"{'-' if value < 0 else ''}${whole}.{cents.ljust(2, '0')}"
