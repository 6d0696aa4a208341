"""The observation policy: what a model sees of a command's output, the same for every model.

ANSI and other escape sequences are stripped, then every control character but newline and tab
(C0, DEL, C1) and every bidi control (`core.text.inert`: a carriage return first keeps what the
line finally showed), runs of a repeated line collapse to one line and a count, and an output longer than
the budget keeps a head and a tail chosen so that diagnostic lines (error, panic, failed, …)
from the part cut still appear; a marker says what was cut and where the full output is: a
read-only file in the session's copy (at most MAX_SAVED bytes), which the agent can read with an
ordinary (charged) command. The host writes it there without following anything the agent made
(`SavedOutputs`, `beneath`): a link, FIFO or file in its way is refused, said in the marker and
in the worker's log, never followed.
"""

from __future__ import annotations

import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path

from benchtui.core.text import inert
from benchtui.runners.kit import beneath

MAX_SAVED = 1 << 20
SAVED_DIR = ".benchtui-outputs"
REPEAT_MIN = 3  # a line shown this many times in a row (or more) collapses
DIAGNOSTIC = re.compile(r"error|panic|failed|failure|fatal|traceback|exception|assert", re.IGNORECASE)
MAX_DIAGNOSTIC_LINE = 300
ANSI = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]"  # CSI (colours, cursor moves)
    r"|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?"  # OSC (titles, links)
    r"|\x1b[PX^_][^\x1b]*(?:\x1b\\)?"  # DCS, SOS, PM, APC
    r"|\x1b[()*+#%][0-9A-Za-z@]"  # character sets
    r"|\x1b[@-Z\\-_=>78]"  # two-character escapes
    r"|\x9b[0-?]*[ -/]*[@-~]"  # 8-bit CSI
)


@dataclass(frozen=True, slots=True)
class Observation:
    text: str
    """What the model sees."""
    raw_chars: int
    cut: bool
    """Lines were cut or collapsed (the full output is in `saved`, if it could be saved)."""
    saved: str = ""


def clean(text: str) -> str:
    """No escape sequences, no control characters but newline and tab, no bidi controls; `\\r`
    overwrites."""
    text = ANSI.sub("", text).replace("\r\n", "\n")
    if "\r" in text:
        text = "\n".join(line.rsplit("\r", 1)[-1] if "\r" in line else line for line in text.split("\n"))
    return inert(text)


def collapse(lines: list[str]) -> tuple[list[str], bool]:
    out: list[str] = []
    collapsed, i = False, 0
    while i < len(lines):
        j = i
        while j + 1 < len(lines) and lines[j + 1] == lines[i]:
            j += 1
        run = j - i + 1
        if run >= REPEAT_MIN:
            out += [lines[i], f"[benchtui: the line above repeated {run - 1:,} more times]"]
            collapsed = True
        else:
            out += lines[i : j + 1]
        i = j + 1
    return out, collapsed


def _fit(lines: list[str], budget: int, from_end: bool = False) -> tuple[list[str], int]:
    """As many whole lines as fit in `budget` characters, and the length of the line that did not."""
    kept: list[str] = []
    used = 0
    for line in reversed(lines) if from_end else lines:
        if used + len(line) + 1 > budget:
            return (kept[::-1] if from_end else kept), len(line)
        kept.append(line)
        used += len(line) + 1
    return (kept[::-1] if from_end else kept), 0


class SavedOutputs:
    """Where whole outputs go: `SAVED_DIR/<name>` in the session's copy (the host folder `copy`,
    held open from the start), named as the agent sees them (`shown`: the copy's path there)."""

    def __init__(self, copy: Path, shown: str) -> None:
        self.shown = shown.rstrip("/")
        self._top = beneath.open_root(copy)
        if self._top is None:
            raise FileNotFoundError(copy)

    def save(self, name: str, text: str) -> tuple[str, str]:
        """(the saved file as the agent names it, "") or ("", why it was not saved)."""
        data = text.encode("utf-8", errors="replace")
        if len(data) > MAX_SAVED:
            data = data[:MAX_SAVED] + f"\n[benchtui: saved output cut at {MAX_SAVED:,} bytes]\n".encode()
        relative = f"{SAVED_DIR}/{name}"
        try:
            assert self._top is not None
            beneath.write_new(self._top, relative, data)
        except (beneath.Refused, OSError) as exc:
            print(f"benchtui: the full output was not saved: {exc}", file=sys.stderr)  # the worker's log
            return "", str(exc)
        return f"{self.shown}/{relative}", ""

    def close(self) -> None:
        if self._top is not None:
            os.close(self._top)
            self._top = None


def shape(text: str, keep: int, outputs: SavedOutputs | None = None, name: str = "") -> Observation:
    """The observation of `text` within about `keep` characters (markers come on top); when lines
    are cut or collapsed, the whole output is saved as `name` in `outputs`."""
    raw = len(text)
    lines, collapsed = collapse(clean(text).split("\n"))
    body = "\n".join(lines)

    def save() -> tuple[str, str]:
        return outputs.save(name, text) if outputs is not None and name else ("", "")

    if len(body) <= keep:
        saved, refused = save() if collapsed else ("", "")
        note = f"\n[benchtui: repeated lines collapsed; {_where(saved, refused)}]" if saved or refused else ""
        return Observation(body + note, raw, collapsed, saved)
    saved, refused = save()
    diagnostics_budget = keep // 4
    room = keep - diagnostics_budget
    head, stop = _fit(lines, room // 2)
    tail, stop_tail = _fit(lines[len(head) :], room - sum(len(x) + 1 for x in head), from_end=True)
    middle_start, middle_end = len(head), len(lines) - len(tail)
    if max(stop, stop_tail) > room // 4:
        # A long line at a cut: whole lines would waste the budget; cut characters instead.
        return _by_characters(body, keep, raw, saved, refused)
    found, used = [], 0
    for number in range(middle_start, middle_end):
        line = lines[number]
        if DIAGNOSTIC.search(line):
            entry = f"  line {number + 1}: {line[:MAX_DIAGNOSTIC_LINE]}"
            if used + len(entry) + 1 > diagnostics_budget:
                break
            found.append(entry)
            used += len(entry) + 1
    cut_chars = max(0, sum(len(x) + 1 for x in lines[middle_start:middle_end]) - 1)
    where = f"; {_where(saved, refused)}" if saved or refused else ""
    marker = (
        f"[benchtui: {cut_chars:,} characters (lines {middle_start + 1}-{middle_end} of {len(lines)}) "
        f"cut here{where}; use head, tail, grep or sed -n on it to see more]"
    )
    if found:
        marker += "\n[benchtui: diagnostic lines from the part cut:]\n" + "\n".join(found)
    shown = "\n".join([*head, marker, *tail])
    return Observation(shown, raw, True, saved)


def _where(saved: str, refused: str) -> str:
    return f"the full output is in {saved}" if saved else f"the full output was not saved ({inert(refused)})"


def _by_characters(body: str, keep: int, raw: int, saved: str, refused: str = "") -> Observation:
    head, tail = body[: keep // 2], body[len(body) - (keep - keep // 2) :]
    where = f"; {_where(saved, refused)}" if saved or refused else ""
    marker = (
        f"\n[benchtui: {len(body) - keep:,} of {len(body):,} characters cut here{where}; "
        "use head, tail, grep or sed -n on it to see more]\n"
    )
    return Observation(head + marker + tail, raw, True, saved)
