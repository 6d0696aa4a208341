"""A run as the viewer's pages see it: its story (re-read when the run moved on), its report
(computed once per state of the run), what every page of it shows in its header, and a page."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchtui.core.errors import BenchtuiError
from benchtui.report import CampaignReport, build
from benchtui.story.run import RunStory
from benchtui.view.site import RunSite


@dataclass(frozen=True, slots=True)
class Page:
    body: bytes
    content_type: str
    csp: str = ""


class RunView:
    """One run dir: its story, re-read when the run moved on, and its report, computed once per
    state of the run."""

    def __init__(self, path: Path, folder: str) -> None:
        self.path = path
        self.site = RunSite(folder)
        self._lock = threading.Lock()
        self._story: RunStory | None = None
        self._report: tuple[tuple[Any, ...], CampaignReport | None, str] | None = None

    @property
    def story(self) -> RunStory:
        with self._lock:
            if self._story is None or self._story.changed():
                self._story = RunStory(self.path)
            return self._story

    def report(self) -> tuple[CampaignReport | None, str]:
        story = self.story
        with self._lock:
            if self._report is None or self._report[0] != story.stamp:
                try:
                    self._report = (story.stamp, build([self.path]), "")
                except BenchtuiError as exc:
                    self._report = (story.stamp, None, str(exc))
            return self._report[1], self._report[2]

    @property
    def name(self) -> str:
        return self.story.campaign.name

    def summary(self) -> dict[str, Any]:
        story = self.story
        rows = story.sessions
        return {
            "site": self.site,
            "name": story.campaign.name,
            "path": str(self.path),
            "state": state_of(story),
            "planned": len(rows),
            "ended": sum(r.state not in ("pending", "running") for r in rows),
            "spent": story.ledger.spent_usd,
            "runner": story.ledger.control.runner or story.campaign.runner,
        }


def state_of(story: RunStory) -> str:
    if story.running:
        return "running"
    return "finished" if all(r.state not in ("pending", "running") for r in story.sessions) else "stopped"


class RunContext:
    """What every page of a run shows in its header."""

    def __init__(self, view: RunView) -> None:
        self.view = view
        self.site = view.site
        story = view.story
        self.name = story.campaign.name
        self.path = str(view.path)
        self.state = state_of(story)
        self.planned = len(story.sessions)
        self.ended = sum(r.state not in ("pending", "running") for r in story.sessions)
        self.runner = story.ledger.control.runner or story.campaign.runner
