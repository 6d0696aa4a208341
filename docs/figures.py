"""The figures the docs repeat (install sizes and times, how long a campaign runs), from one file.

`docs/figures.toml` holds them, as the scripts in `benchmarks/` measured them. A page never types
one: it marks it, `<!--fig durations.play.seconds:about-->about two and a half minutes<!--/fig-->`
(a key into the file, and optionally a form: `about`), and `fill` writes the value between the
markers. `docs/gen_reference.py` runs it over every page and the README (and `--check` says which
are stale); tests/docs also checks that no two marks of one figure say different things, and
that no figure of these measurements stands unmarked beside what it measures.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
FIGURES = DOCS / "figures.toml"
MARK = re.compile(r"(?<!`)<!--fig ([\w.]+)(?::(\w+))?-->(.*?)<!--/fig-->", re.DOTALL)
"""A mark; one right after a backtick is an example in a code span (a page explaining marks)."""
HALF_MINUTES = {
    1.0: "a minute",
    1.5: "a minute and a half",
    2.0: "two minutes",
    2.5: "two and a half minutes",
    3.0: "three minutes",
    3.5: "three and a half minutes",
    4.0: "four minutes",
}


def load(path: Path = FIGURES) -> dict[str, Any]:
    return tomllib.loads(path.read_text(encoding="utf-8"))


def pages() -> list[Path]:
    """Every page that may state a figure: the README and the docs."""
    return [ROOT / "README.md", *sorted(DOCS.rglob("*.md"))]


def lookup(figures: dict[str, Any], key: str) -> Any:
    node: Any = figures
    for part in key.split("."):
        if not isinstance(node, dict) or part not in node:
            raise KeyError(f"no figure {key!r} in {FIGURES.name}")
        node = node[part]
    return node


def show(key: str, value: Any, form: str | None = None) -> str:
    """A figure as a page states it: `seconds` as `39 s` (form `about`: in words past 90 s),
    `venv_mb` as MB or GB, anything else as it is."""
    name = key.rsplit(".", 1)[-1]
    if name == "seconds" and form == "about":
        if value < 90:
            return f"about {value:g} s"
        halves = round(value / 30) / 2
        return "about " + HALF_MINUTES.get(halves, f"{halves:g} minutes")
    if form is not None:
        raise KeyError(f"unknown form {form!r} of {key!r} (known: about, for seconds)")
    if name == "seconds":
        return f"{value:g} s"
    if name == "venv_mb":
        return f"{value / 1000:.1f} GB" if value >= 1000 else f"{value:g} MB"
    return str(value)


def fill(text: str, figures: dict[str, Any]) -> str:
    """`text` with every marked figure written from `figures` (KeyError: a mark names none)."""

    def one(m: re.Match[str]) -> str:
        key, form = m.group(1), m.group(2)
        shown = show(key, lookup(figures, key), form)
        return f"<!--fig {key}{':' + form if form else ''}-->{shown}<!--/fig-->"

    return MARK.sub(one, text)


def marks(text: str) -> list[tuple[str, str]]:
    """(key and form, what the page says) of every mark in `text`."""
    return [(m.group(1) + (f":{m.group(2)}" if m.group(2) else ""), m.group(3)) for m in MARK.finditer(text)]


def install_table(figures: dict[str, Any]) -> str:
    """The install table (getting-started.md), every row from `[install.*]`."""
    rows = [
        "| install | what | packages | venv on disk | time | measured |",
        "|---|---|---:|---:|---:|---|",
    ]
    for name, row in figures["install"].items():
        if not isinstance(row, dict):
            continue
        command = f"pip install -e '.[{row['extra']}]'" if row["extra"] else "pip install -e ."
        cells = [show(f"install.{name}.{field}", row[field]) for field in ("packages", "venv_mb", "seconds")]
        rows.append(f"| `{command}` | {row['what']} | {' | '.join(cells)} | {row['measured']} |")
    install = figures["install"]
    return "\n".join(
        [
            *rows,
            "",
            f"Measured: {install['measured']}. Packages: {install['packages']}; venv: {install['venv']}.",
        ]
    )


def update(path: Path, table: str, values: dict[str, Any]) -> None:
    """Set `values` in `[table]` of the figures file, keeping its comments and layout (the
    benchmark scripts write their measurements with it)."""
    text = path.read_text(encoding="utf-8")
    head = re.search(rf"^\[{re.escape(table)}\]\s*$", text, re.MULTILINE)
    if head is None:
        raise KeyError(f"no table [{table}] in {path.name}")
    end = re.compile(r"^\[", re.MULTILINE).search(text, head.end())
    body = text[head.end() : end.start() if end else len(text)]
    for key, value in values.items():
        line = f"{key} = {_toml(value)}"
        body, found = re.subn(
            rf"^{re.escape(key)} = .*$", line.replace("\\", "\\\\"), body, count=1, flags=re.MULTILINE
        )
        if not found:
            body = body.rstrip("\n") + f"\n{line}\n" + ("\n" if end else "")
    path.write_text(text[: head.end()] + body + (text[end.start() :] if end else ""), encoding="utf-8")
    tomllib.loads(path.read_text(encoding="utf-8"))  # still valid TOML


def _toml(value: Any) -> str:
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return str(value)
