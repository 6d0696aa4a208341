"""The ledger's TOML writer: what it writes reads back as exactly what it was given."""

from __future__ import annotations

import tomllib

import pytest
import tomli_w

from benchtui.core import tomlout

HOSTILE = [
    "",
    "plain",
    'a "quoted" name',
    "back\\slash",
    "new\nline",
    "tab\tand\rreturn",
    "nul\x00byte",
    "del\x7fchar",
    "bell\x07 and \x1b[31m escape",
    "emoji 🐛 and ünïcode",
    "\u2028 line separator",
    "a.dotted.key",
    "[bracket]",
    "'single'",
    "='''",
    "openai/gpt-5#0001",
    "x" * 1000,
]


def roundtrip(doc: dict) -> dict:
    return tomllib.loads(tomlout.dumps(doc))


@pytest.mark.parametrize("text", HOSTILE)
def test_hostile_strings_read_back_as_written_as_keys_and_values(text: str) -> None:
    doc = {
        "name": text,
        text: 1,
        "models": {text: {"spent_usd": 0.1, "label": text}, "other": {}},
        "running": {text: {"counters": {text: 3}}},
    }
    assert roundtrip(doc) == doc
    assert roundtrip(doc) == tomllib.loads(tomli_w.dumps(doc))


def test_scalars_keep_their_types_and_values() -> None:
    doc = {
        "format": 1,
        "enforce": True,
        "paused": False,
        "big": 2**62,
        "negative": -7,
        "amounts": {"tiny": 1e-06, "micro": 0.000123, "whole": 1000000.0, "huge": 1e300, "neg": -0.5},
    }
    back = roundtrip(doc)
    assert back == doc
    assert [type(v) for v in back.values()] == [int, bool, bool, int, int, dict]


def test_empty_tables_survive() -> None:
    doc = {"running": {}, "models": {"m": {}}, "totals": {"sessions_running": 0}}
    assert roundtrip(doc) == doc


def test_tables_after_scalars_whatever_the_order_given() -> None:
    doc = {"totals": {"a": 1}, "format": 1, "models": {"m": {"x": 1}}, "enforce": True}
    assert roundtrip(doc) == doc


@pytest.mark.parametrize("bad", [None, [1, 2], (1,), float("nan"), float("inf"), b"bytes", object()])
def test_anything_it_cannot_write_faithfully_is_refused(bad: object) -> None:
    with pytest.raises((TypeError, ValueError)):
        tomlout.dumps({"value": bad})


def test_a_non_string_key_is_refused() -> None:
    with pytest.raises(TypeError):
        tomlout.dumps({1: "one"})  # type: ignore[dict-item]
