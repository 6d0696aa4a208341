"""The viewer's pages and their addresses: one layout for the server and the export.

Every page has a path relative to the viewer's root (`sessions/<id>/attempt-1.html`) and links to
the others by relative links, so the same page works served (`http://127.0.0.1:P/<token>/…`) and
from disk (`file:///…/export/…`). One run is served at the root; several, each in a folder of its
own (`<run name>/…`). `route` reads a path back into what the page shows; a path it does not know
is no page (never a file name looked up on disk).
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

from benchtui.engine.campaign import slug
from benchtui.story.trajectory import Cursor

STATIC = ("view.css", "view.js")
_NUMBER = r"(0|[1-9]\d{0,15})"
_FILE = r"(attempt-\d{1,6}\.(?:traj\.json|worker\.log|agent\.log|certificates\.json)|evidence\.jsonl)"
_SAVED = r"(action-\d{1,9}\.txt)"
_SESSION = r"([A-Za-z0-9_@+=-][A-Za-z0-9_.@+=-]{0,199})"
PATTERNS = {
    "campaign": re.compile(r"index\.html"),
    "report": re.compile(r"report\.html"),
    "sessions": re.compile(r"sessions\.html"),
    "model": re.compile(r"models/([^/]{1,300})\.html"),
    "session": re.compile(rf"sessions/{_SESSION}/index\.html"),
    "attempt": re.compile(rf"sessions/{_SESSION}/attempt-{_NUMBER}\.html"),
    "page": re.compile(
        rf"sessions/{_SESSION}/attempt-{_NUMBER}\.at-{_NUMBER}-{_NUMBER}-{_NUMBER}-{_NUMBER}\.html"
    ),
    "output": re.compile(rf"sessions/{_SESSION}/output-{_NUMBER}-{_NUMBER}(?:\.part-{_NUMBER})?\.html"),
    "file": re.compile(rf"sessions/{_SESSION}/files/{_FILE}(?:\.at-{_NUMBER})?\.html"),
    "saved": re.compile(rf"sessions/{_SESSION}/saved/{_SAVED}(?:\.at-{_NUMBER})?\.html"),
}


@dataclass(frozen=True, slots=True)
class Route:
    """A page of one run: its kind and its parts (session id, attempt, cursor, …)."""

    kind: str
    parts: tuple[str, ...]


def route(relative: str) -> Route | None:
    """What a run's page path (below its folder) shows, or None."""
    for kind, pattern in PATTERNS.items():
        found = pattern.fullmatch(relative)
        if found:
            return Route(kind, found.groups(default=""))
    return None


@dataclass(frozen=True, slots=True)
class RunSite:
    """The pages of one run, under `folder` ("" when it is the only run)."""

    folder: str

    def _at(self, path: str) -> str:
        return f"{self.folder}/{path}" if self.folder else path

    def campaign(self) -> str:
        return self._at("index.html")

    def report(self) -> str:
        return self._at("report.html")

    def sessions(self) -> str:
        return self._at("sessions.html")

    def model(self, model: str) -> str:
        return self._at(f"models/{slug(model)}.html")

    def session(self, session: str) -> str:
        return self._at(f"sessions/{session}/index.html")

    def attempt(self, session: str, attempt: int, cursor: Cursor | None = None) -> str:
        if cursor is None or cursor.offset == 0:
            return self._at(f"sessions/{session}/attempt-{attempt}.html")
        c = cursor
        return self._at(
            f"sessions/{session}/attempt-{attempt}.at-{c.offset}-{c.index}-{c.calls}-{c.actions}.html"
        )

    def output(self, session: str, attempt: int, offset: int, part: int = 0) -> str:
        tail = f".part-{part}" if part else ""
        return self._at(f"sessions/{session}/output-{attempt}-{offset}{tail}.html")

    def file(self, session: str, name: str, offset: int = 0) -> str:
        tail = f".at-{offset}" if offset else ""
        return self._at(f"sessions/{session}/files/{name}{tail}.html")

    def saved(self, session: str, name: str, offset: int = 0) -> str:
        tail = f".at-{offset}" if offset else ""
        return self._at(f"sessions/{session}/saved/{name}{tail}.html")


def link(source: str, target: str) -> str:
    """The relative URL from page `source` to page `target` (both root-relative paths)."""
    relative = posixpath.relpath(target, posixpath.dirname(source) or ".")
    return quote(relative, safe="/.-_~")


def folders(paths: list[Path]) -> list[str]:
    """A folder name per run (its run dir's name, made unique), or [""] for a single run."""
    if len(paths) == 1:
        return [""]
    taken: dict[str, int] = {}
    out = []
    for path in paths:
        name = re.sub(r"[^A-Za-z0-9_.-]", "_", path.name).strip(".") or "run"
        taken[name] = taken.get(name, 0) + 1
        out.append(name if taken[name] == 1 else f"{name}-{taken[name]}")
    return out
