"""Headless Chromium for the HTML report: a screenshot and the DOM as the browser built it, with
every network request failing (a page that needs the network shows it by breaking)."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

NAMES = ("chromium", "chromium-browser", "google-chrome", "chrome")
OFFLINE = (
    # Any host name resolves to nothing, and anything that still tries goes to a dead proxy.
    "--host-resolver-rules=MAP * ~NOTFOUND",
    "--proxy-server=http://127.0.0.1:9",
    "--proxy-bypass-list=<-loopback>",
)


def find_chromium() -> str | None:
    return next((path for name in NAMES if (path := shutil.which(name))), None)


def _run(chromium: str, args: list[str], page: Path, timeout: float) -> subprocess.CompletedProcess[str]:
    with tempfile.TemporaryDirectory(prefix="benchtui-chromium-") as profile:
        cmd = [
            chromium,
            "--headless",
            "--no-sandbox",  # needed as root (CI containers); the page is our own file
            "--disable-gpu",
            "--hide-scrollbars",
            "--no-first-run",
            f"--user-data-dir={profile}",
            *OFFLINE,
            *args,
            page.resolve().as_uri(),
        ]
        return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=True)


def screenshot(page: Path, png: Path, *, size: tuple[int, int] = (1200, 2400), timeout: float = 90) -> Path:
    chromium = find_chromium()
    if chromium is None:
        raise FileNotFoundError("chromium is not installed (Debian: apt-get install chromium)")
    _run(chromium, [f"--window-size={size[0]},{size[1]}", f"--screenshot={png.resolve()}"], page, timeout)
    return png


def dump_dom(page: Path, *, timeout: float = 90) -> str:
    chromium = find_chromium()
    if chromium is None:
        raise FileNotFoundError("chromium is not installed (Debian: apt-get install chromium)")
    return _run(chromium, ["--dump-dom"], page, timeout).stdout
