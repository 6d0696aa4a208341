"""What the benchmark's runner has written so far: its `submission.json`, read while it runs (the
progress) and once it ended (the outcome), without trusting the file.

The runner rewrites the file after every episode (a temporary file renamed over it), and first
after episode 1: before it, the run is in triage. The file is opened beneath its folder without
following a link (a link, a FIFO or a device there is refused, never opened as what it names),
bounded in size; a file that is not a JSON object of the submission's shape reads as `None`
with the reason.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchtui.runners.kit.beneath import Refused, read_beneath

NAME = "submission.json"
MAX_BYTES = 256 << 20
"""A real run's file holds 50 episodes' ledgers and observations (a few MB); past this it is refused."""
EPISODES = 50


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """The facts of a submission the runner needs (the typed reader of the whole file is
    `benchtui.core.submission`, the outputs' concern)."""

    status: str
    """`completed` or `run_error`, as the runner wrote it."""
    run_error: str | None
    episodes: int
    accepted: tuple[int, ...]
    """Indexes (1-based) of the episodes whose submit was accepted."""
    rankable: bool
    model: str
    shortlist: int
    """Rules its triage froze (0: none yet)."""

    @property
    def whole(self) -> bool:
        """A finished run: completed, no run error, every episode of its shortlist run."""
        return self.status == "completed" and self.run_error is None and self.episodes == EPISODES

    def note(self) -> str:
        """Its progress in a few words (the TUI, headless lines and `ctl status`)."""
        accepts = f", {len(self.accepted)} accepted" if self.accepted else ""
        return f"episode {self.episodes}/{EPISODES}{accepts}"


class Unreadable(Exception):
    """The file is there but is not a submission (the message says why, in one line)."""


def read(folder: Path) -> tuple[bytes, Checkpoint] | None:
    """The file's bytes and what they say; None when there is no file yet. Raises Unreadable."""
    try:
        data = read_beneath(folder, NAME, MAX_BYTES)
    except Refused as exc:
        raise Unreadable(str(exc)) from None
    if data is None:
        return None
    return data, parse(data)


def parse(data: bytes) -> Checkpoint:
    try:
        doc = json.loads(data)
    except (ValueError, RecursionError) as exc:
        raise Unreadable(f"{NAME} is not JSON ({str(exc)[:120]})") from None
    if not isinstance(doc, dict):
        raise Unreadable(f"{NAME} is not a JSON object")
    status, episodes = doc.get("status"), doc.get("episodes")
    if status not in ("completed", "run_error") or not isinstance(episodes, list):
        raise Unreadable(f"{NAME} has no status and episodes of the runner's shape")
    error = doc.get("run_error")
    accepted = tuple(
        e["index"]
        for e in episodes
        if isinstance(e, dict) and e.get("status") == "bug_found" and type(e.get("index")) is int
    )
    shortlist = doc.get("shortlist")
    return Checkpoint(
        status=status,
        run_error=error if isinstance(error, str) else None,
        episodes=len(episodes),
        accepted=accepted,
        rankable=doc.get("rankable") is True,
        model=doc["model"] if isinstance(doc.get("model"), str) else "",
        shortlist=len(shortlist) if isinstance(shortlist, list) else 0,
    )


def certificates(data: bytes) -> list[tuple[int, str, dict[str, Any]]]:
    """(episode index, rule, certificate) of every accepted submit in the file."""
    doc = json.loads(data)
    found = []
    for episode in doc.get("episodes") or []:
        if not isinstance(episode, dict) or episode.get("status") != "bug_found":
            continue
        ledger = episode.get("ledger")
        for attempt in (ledger.get("submit") if isinstance(ledger, dict) else None) or []:
            if isinstance(attempt, dict) and attempt.get("accepted") is True:
                cert = attempt.get("certificate")
                if isinstance(cert, dict):
                    found.append((int(episode.get("index", 0)), str(episode.get("rule", "")), cert))
                break
    return found
