"""`benchtui view --export DIR`: the viewer's pages as static files that open from disk.

The export is what the viewer serves, page for page: starting at `index.html`, every page a page
links to is rendered by the same `Viewer` and written where its relative link points, so every
link works from `file://` with no server. Long trajectories and files are followed up to
`session_pages.EXPORT_BYTES` each (the pages say where the rest is). The folder is built beside
DIR and renamed into place when whole; an existing DIR that is not empty is never touched.
"""

from __future__ import annotations

import os
import posixpath
import shutil
from collections import deque
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

from benchtui.core.errors import BadInput
from benchtui.view.pages import Viewer

PRIVATE = """These pages show benchtui campaigns as the viewer does: every prompt, trajectory, command
output, certificate and verdict of their sessions. They hold the benchmark's answer key (the
certificates that found its bugs): keep them private. `benchtui report --public` writes the
shareable summary.

Open index.html in a browser; no server is needed.
"""


class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.found: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if name in ("href", "src") and value:
                self.found.append(value)


def links(page: str, html: str) -> list[str]:
    """The root-relative paths of the pages `html` (at `page`) links to."""
    parser = _Links()
    parser.feed(html)
    out = []
    for value in parser.found:
        parts = urlsplit(value)
        if parts.scheme or parts.netloc or not parts.path:
            continue  # another origin (there is none), or a link within the page
        target = posixpath.normpath(posixpath.join(posixpath.dirname(page), unquote(parts.path)))
        if not target.startswith("../") and target != "..":
            out.append(target)
    return out


def check_target(out: Path, run_dirs: list[Path]) -> None:
    """DIR must be new, or an empty folder, and outside every run dir."""
    resolved = out.resolve()
    for run in run_dirs:
        if resolved.is_relative_to(run.resolve()):
            raise BadInput(f"view --export: {out} is inside the run dir {run}: export elsewhere")
    if out.is_symlink() or (out.exists() and not out.is_dir()):
        raise BadInput(f"view --export: {out} exists and is not a folder")
    if out.is_dir() and any(out.iterdir()):
        raise BadInput(f"view --export: {out} is not empty: give a new or an empty folder")
    if not resolved.parent.is_dir():
        raise BadInput(f"view --export: {out.parent} is not a folder")


def export(run_dirs: list[Path], out: Path) -> int:
    """Write the export into `out`; returns the number of pages written."""
    check_target(out, run_dirs)
    viewer = Viewer(run_dirs, export=True)
    staging = out.resolve().parent / f".{out.resolve().name}.benchtui-export-{os.getpid()}"
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir()
    written = 0
    try:
        queue, seen = deque(["index.html"]), {"index.html"}
        while queue:
            path = queue.popleft()
            page = viewer.page(path)
            if page is None:
                continue
            target = staging / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(page.body)
            written += 1
            if page.content_type.startswith("text/html"):
                for found in links(path, page.body.decode()):
                    if found not in seen:
                        seen.add(found)
                        queue.append(found)
        (staging / "PRIVATE.txt").write_text(PRIVATE)
        if out.is_dir():
            out.rmdir()  # empty (checked): the export takes its place
        staging.rename(out)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return written
